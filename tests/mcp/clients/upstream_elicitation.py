"""An upstream's own elicitation goes only to the human of the eval whose call triggered it
(tests/mcp/upstream_elicitation.rs). Two clients of one HTTP server, each with its own human:
1. A alone calls everything's trigger-elicitation-request: A's human is asked (and declines);
2. while B's eval has a slow call in flight on the same upstream, A triggers again: two evals
   have calls there, so the request is declined without asking anyone — B's human never sees
   A's question."""

import asyncio

from harness import Human, connect, decline, evaluate, run

TRIGGER = """
const r = await codemode["everything__trigger-elicitation-request"]({});
const text = JSON.stringify(r);
return text.includes("declined") ? "declined" : text.includes("provided") ? "accepted" : text;
"""

SLOW = """
await codemode["everything__trigger-long-running-operation"]({ duration: 6, steps: 3 });
return "slow done";
"""


async def main() -> dict:
    human_a = Human(decline(), name="A")
    human_b = Human(name="B")
    async with connect(human_a) as a, connect(human_b) as b:
        alone = await evaluate(a, TRIGGER)
        slow = asyncio.create_task(evaluate(b, SLOW))
        # Let B's call reach the upstream (it runs 6 s) before A's triggers.
        await asyncio.sleep(2.0)
        together = await evaluate(a, TRIGGER)
        slow_result = await slow
        protocol = a.protocol_version
    return {
        "protocol": protocol,
        "alone": alone,
        "together": together,
        "slow": slow_result,
        "asked_a": [q["message"] for q in human_a.asked],
        "asked_b": [q["message"] for q in human_b.asked],
    }


run(main)
