"""An upstream's form accepted with fields left out goes back completed from the form's defaults
(SEP-1034; tests/mcp/upstream_elicitation.rs): the human accepts server-everything's 13-field
form giving only the required `name`; the upstream echoes what it received."""

from harness import Human, accept, connect, evaluate, run

TRIGGER = """
const r = await codemode["everything__trigger-elicitation-request"]({});
const raw = (Array.isArray(r) ? r : [r]).find(b => typeof b === "string" && b.includes("Raw result: "));
return JSON.parse(raw.slice(raw.indexOf("Raw result: ") + 12));
"""


async def main() -> dict:
    human = Human(accept({"name": "Ada"}))
    async with connect(human) as client:
        result = await evaluate(client, TRIGGER)
        protocol = client.protocol_version
    return {"protocol": protocol, "result": result["structured"]["result"], "asked": len(human.asked)}


run(main)
