"""One eval with a traceparent in its request's `_meta`: two calls to the HTTP upstream `web`,
the first asked (approved through elicitation). Observes the eval's result and what was asked.
"""

import os

from harness import Human, approve, connect, evaluate, run

CODE = """const said = await codemode.web__echo({message: "secret argument"});
const sum = await codemode.web__add({a: 2, b: 3});
return [said, sum];"""


async def main() -> dict:
    human = Human(approve("approve_once"))
    async with connect(human) as client:
        meta = {"traceparent": os.environ["TRACEPARENT"]}
        result = await evaluate(client, CODE, "codemode_eval_gate", meta=meta)
    structured = result["structured"]
    return {"result": {k: structured[k] for k in ("ok", "result")}, "is_error": result["is_error"],
            "asked": len(human.asked)}


run(main)
