"""Approver rights over stdio (tests/mcp/rights.rs): no approval API is served, so a critical call
that needs an approver holding `approve:critical` is denied at once for the local caller, and
its client is never prompted. Emits the number of prompts and the eval's result."""

from __future__ import annotations

from harness import Human, connect, evaluate, run

CODE = """
try { return await codemode.everything__echo({message: "deploy"}); }
catch (e) { return e.message; }
"""


async def main() -> dict:
    human = Human()
    async with connect(human) as client:
        result = await evaluate(client, CODE, "codemode_eval_gate")
    return {"prompts": len(human.asked), "result": result}


run(main)
