"""hitl_request as the approval-gateway design has it (tests/mcp/hitl_gateway.rs): the
`human_intervention_request` alias, `metadata` echoed back, and a timeout with a
`defaultOption`. Emits {alias, timeout, asked}."""

from __future__ import annotations

from harness import Human, accept, connect, decline, evaluate, run

ALIAS = """
return await codemode.human_intervention_request({
  question: "Ship it?", options: ["yes", "no"], metadata: { ticket: 42, tags: ["a", null] },
});
"""

TIMEOUT = """
return await codemode.hitl_request({
  question: "Roll back?", options: ["yes", "no"], defaultOption: "no", timeoutMs: 300,
  metadata: "m",
});
"""


async def main() -> dict:
    # The second question is answered only after its 300 ms are over.
    human = Human(accept({"answer": "yes"}), decline(delay=3.0))
    async with connect(human) as client:
        alias = await evaluate(client, ALIAS)
        timeout = await evaluate(client, TIMEOUT)
    return {"alias": alias, "timeout": timeout, "asked": [q["message"] for q in human.asked]}


run(main)
