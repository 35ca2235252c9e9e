"""An upstream's questions reach exactly the eval whose call asked them
(tests/mcp/upstream_elicitation.rs, upstream tests/mcp/asking_server.py as `asking`). Two
clients, each with its own human:
1. `together`: A's and B's evals call `asking__ask` at once; each human answers only once the
   other has been asked too, so both calls are in flight on the upstream when each question
   comes — each human gets the question of its own eval's call;
2. `late`: A's eval calls `asking__ask_later`, which returns at once and asks its question
   later, while B's eval has `asking__hold` in flight (and nobody else has a call there); what
   became of it is `hold`'s answer. It must not reach B's human."""

import asyncio

from harness import Human, connect, evaluate, run, wait_until

ASK = 'return await codemode.asking__ask({ who: "%s" });'
LATER = 'return await codemode.asking__ask_later({ who: "A" });'
HOLD = "return await codemode.asking__hold({});"


async def main() -> dict:
    human_a = Human(name="A")
    human_b = Human(name="B")

    async def after_b_asked() -> None:
        await wait_until(lambda: human_b.asked, "B's human to be asked")

    async def after_a_asked() -> None:
        await wait_until(lambda: human_a.asked, "A's human to be asked")

    human_a.answers = [{"action": "accept", "content": {"answer": "from A"}, "after": after_b_asked}]
    human_b.answers = [{"action": "accept", "content": {"answer": "from B"}, "after": after_a_asked}]
    async with connect(human_a) as a, connect(human_b) as b:
        together = await asyncio.gather(evaluate(a, ASK % "A"), evaluate(b, ASK % "B"))
        later = await evaluate(a, LATER)
        held = await evaluate(b, HOLD)
    return {
        "together": list(together),
        "later": later,
        "held": held,
        "asked_a": [q["message"] for q in human_a.asked],
        "asked_b": [q["message"] for q in human_b.asked],
    }


run(main)
