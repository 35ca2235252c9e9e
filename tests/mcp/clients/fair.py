"""One client (A) holds its per-client eval cap with two evals waiting on its human; its third
eval is refused at once; another client (B, its own session) runs at once; then A's human
answers and A can run again. Run in legacy mode (each session is its own client)."""

import asyncio

from harness import Human, approve, connect, evaluate, run, wait_event, wait_until

# Two different calls: identical ones would join one question (same caller, tool and arguments).
ECHO = "return await codemode.everything__echo({ message: 'held' });"
ECHO_AGAIN = "return await codemode.everything__echo({ message: 'held again' });"


async def main() -> dict:
    release = asyncio.Event()

    async def released() -> None:
        await wait_event(release, "the release of A's human")

    human_a = Human(approve("approve_once", after=released), approve("approve_once", after=released), name="A")
    async with connect(human_a) as a, connect(Human(name="B")) as b:
        first = asyncio.create_task(evaluate(a, ECHO, "codemode_eval_slow"))
        second = asyncio.create_task(evaluate(a, ECHO_AGAIN, "codemode_eval_slow"))
        await wait_until(lambda: len(human_a.asked) == 2, "A's two questions")
        a_refused = await evaluate(a, "return 1")
        b_runs = await evaluate(b, "return 1 + 1")
        release.set()
        a_first, a_second = await first, await second
        a_again = await evaluate(a, "return 3")
    return {
        "a_refused": a_refused,
        "b_runs": b_runs,
        "a_first": a_first,
        "a_second": a_second,
        "a_again": a_again,
        "asked_a": len(human_a.asked),
    }


run(main)
