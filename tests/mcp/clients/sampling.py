"""An upstream's sampling request during a script's call reaches that eval's client's model,
as the profile says (tests/mcp/sampling.rs). Clients of one HTTP server, on 2025-11-25:
A and B with a model (a `sampling_callback`) and a human, C with a human only.
1. profile `open` (sampling allowed): server-everything's trigger-sampling-request is answered
   by A's model;
2. profile `guarded` (the default, ask): A's human is asked, approves, A's model answers;
3. the same, declined: A's model is not asked, the script gets the refusal;
4. profile `closed` (deny): nobody is asked;
5. C, whose client declared no sampling: refused; D, whose client speaks 2026-07-28 (a server
   sends it no requests): its model answers in the retry of an input-required result, under
   `open` at once, under `guarded` after D's human approved in an earlier round;
6. while A's eval holds a call on `chatty`, B's eval there asks for sampling: two evals have
   calls there, so it is refused and no model sees it; then B alone, asked under `guarded`:
   B's human sees the messages (an image by its size), B's model answers."""

import asyncio
import json
import os

from mcp.types import CreateMessageResult, TextContent

from mcp import Client

from harness import Human, Ready, approve, connect, decline, evaluate, run, target, wait_until

EVERYTHING = """
const r = await codemode["everything__trigger-sampling-request"]({ prompt: "hi", maxTokens: 5 });
return JSON.parse(r.slice(r.indexOf("{")));
"""
SAMPLE = 'return await codemode.chatty__sample({ text: "ping" });'
HOLD = 'return await codemode.chatty__hold({ tag: "a" });'


class Model:
    """A sampling callback: answers `<name> heard <last text>` as model `model-<name>`, and
    keeps every request's parameters."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[dict] = []

    async def __call__(self, _ctx, params) -> CreateMessageResult:
        self.asked.append(params.model_dump(by_alias=True, exclude_none=True, mode="json"))
        texts = [m.content.text for m in params.messages if getattr(m.content, "type", None) == "text"]
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=f"{self.name} heard {texts[-1]}"),
            model=f"model-{self.name}",
            stop_reason="endTurn",
        )


async def main() -> dict:
    chatty = os.environ["CHATTY_DIR"]
    model_a, model_b = Model("a"), Model("b")
    human_a = Human(approve("approve"), decline(), name="A")
    human_b = Human(approve("approve"), name="B")
    human_c = Human(name="C")
    async with connect(human_a, sampling_callback=model_a) as a, connect(
        human_b, sampling_callback=model_b
    ) as b, connect(human_c) as c:
        declared = await evaluate(a, 'return await codemode.chatty__declared({});', tool="codemode_eval_open")
        allowed = await evaluate(a, EVERYTHING, tool="codemode_eval_open")
        approved = await evaluate(a, EVERYTHING, tool="codemode_eval_guarded")
        declined = await evaluate(a, EVERYTHING, tool="codemode_eval_guarded")
        denied = await evaluate(a, EVERYTHING, tool="codemode_eval_closed")
        no_model = await evaluate(c, EVERYTHING, tool="codemode_eval_open")
        model_d = Model("d")
        human_d = Human(approve("approve"), name="D")
        async with Ready(
            Client(target(), mode="auto", sampling_callback=model_d, elicitation_callback=human_d)
        ) as d:
            modern = await evaluate(d, EVERYTHING, tool="codemode_eval_open")
            modern_asked = await evaluate(d, EVERYTHING, tool="codemode_eval_guarded")
            modern_protocol = d.protocol_version
        asked_a = len(model_a.asked)

        held = asyncio.create_task(evaluate(a, HOLD, tool="codemode_eval_open"))
        await wait_until(lambda: os.path.exists(os.path.join(chatty, "held-a")), "A's call on chatty")
        crowded = await evaluate(b, SAMPLE, tool="codemode_eval_open")
        open(os.path.join(chatty, "release-a"), "w").close()
        held = await held
        alone = await evaluate(b, SAMPLE, tool="codemode_eval_guarded")
        protocol = a.protocol_version
    return {
        "protocol": protocol,
        "evals": {
            "declared": declared,
            "allowed": allowed,
            "approved": approved,
            "declined": declined,
            "denied": denied,
            "no_model": no_model,
            "modern": modern,
            "modern_asked": modern_asked,
            "held": held,
            "crowded": crowded,
            "alone": alone,
        },
        "model_a": model_a.asked,
        "model_a_after_everything": asked_a,
        "model_b": model_b.asked,
        "model_d": model_d.asked,
        "modern_protocol": modern_protocol,
        "asked_a": [q["message"] for q in human_a.asked],
        "asked_b": [q["message"] for q in human_b.asked],
        "asked_d": [q["message"] for q in human_d.asked],
        "asked_c": [q["message"] for q in human_c.asked],
    }


if __name__ == "__main__":
    run(main)
