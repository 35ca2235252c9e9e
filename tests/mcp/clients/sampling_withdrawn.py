"""A sampling request whose script stops waiting is withdrawn (tests/mcp/sampling.rs): an eval
under `guarded` calls chatty's `sample` (stubborn: chatty does not withdraw the request itself);
while its human is being asked, the client cancels the
eval. The question is withdrawn, and the request is audited as not answered in time."""

import anyio

from harness import EVENT_DEADLINE, audit_records, connect, evaluate, run, wait_until
from sampling import Model


class Waiting:
    """An elicitation callback that never answers: it notes that it was asked, and whether its
    question was withdrawn (cancelled)."""

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.withdrawn = False

    async def __call__(self, _ctx, _params):
        self.asked.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.withdrawn = True
            raise


async def main() -> dict:
    human, model = Waiting(), Model("a")
    out: dict = {"finished_anyway": None}
    async with connect(human, sampling_callback=model) as client:

        async def sample() -> None:
            code = 'return await codemode.chatty__sample({ text: "ping", stubborn: true });'
            out["finished_anyway"] = await evaluate(client, code, tool="codemode_eval_guarded")

        async with anyio.create_task_group() as tg:
            tg.start_soon(sample)
            with anyio.fail_after(EVENT_DEADLINE):
                await human.asked.wait()
            tg.cancel_scope.cancel()

        def sampled() -> list[dict]:
            return [r for r in audit_records() if r["event"] == "sampling"]

        await wait_until(lambda: sampled(), "the sampling record")
        out["record"] = {k: sampled()[0][k] for k in ("server", "profile", "decision", "channel", "status", "reason", "model")}
        out["next"] = await evaluate(client, "1 + 2")
    out["model"] = len(model.asked)
    out["withdrawn"] = human.withdrawn
    return out


if __name__ == "__main__":
    run(main)
