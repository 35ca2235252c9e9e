"""A client that declares no elicitation: asked calls follow the profile's elicitationFallback
(`sup`: deny, `lenient`: allow) and hitl_request resolves to canceled without asking anyone."""

from harness import connect, evaluate, run

ASKED = """
try {
  return await codemode.everything__echo({ message: "no human" });
} catch (e) {
  return { name: e.name, toolName: e.toolName, reason: e.reason };
}
"""

HITL = 'return await codemode.hitl_request({ question: "Deploy?", options: ["yes", "no"], defaultOption: "yes" });'


async def main() -> dict:
    async with connect(None) as client:
        return {
            "protocol": client.protocol_version,
            "fallback_deny": await evaluate(client, ASKED, "codemode_eval_sup"),
            "fallback_allow": await evaluate(client, ASKED, "codemode_eval_lenient"),
            "hitl": await evaluate(client, HITL),
        }


run(main)
