"""The audit's account of an eval's calls (tests/mcp/audit.rs): one eval whose calls are decided
at each stage — approved by the human through elicitation, refused by the profile, refused for a
permission the caller lacks, a tool that does not exist, arguments against the inputSchema — and
a hitl_request with metadata that the human answers.

Environment (besides harness.py's): CODEMODE_TOKEN, when set, the bearer token presented to
CODEMODE_URL; unset, the client is local. Emits {outcome, asked}.
"""

from __future__ import annotations

import os

from harness import MODE, Human, Ready, accept, approve, connect, evaluate, run
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

CODE = """
const out = [];
for (const [name, args] of [
    ["everything__echo", {message: "approved"}],
    ["everything__get-sum", {a: 1, b: 2}],
    ["time__get_current_time", {timezone: "UTC"}],
    ["everything__nope", {}],
    ["everything__echo", {message: 7}],
]) {
    try { await codemode[name](args); out.push("ok"); }
    catch (e) { out.push(e.reason ?? e.name); }
}
const asked = await codemode.hitl_request({
    question: "Ship\\u001b[2J it?", options: ["yes", "no"], timeoutMs: 30000,
    metadata: { ticket: 42, note: "=cmd\\u202e", deep: [[1, 2]] },
});
out.push(asked.selectedOption);
return out;
"""


def client(human: Human) -> object:
    token = os.environ.get("CODEMODE_TOKEN")
    if not token:
        return connect(human)
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    transport = streamable_http_client(os.environ["CODEMODE_URL"], http_client=http)
    return Ready(Client(transport, mode=MODE, elicitation_callback=human))


async def main() -> dict:
    human = Human(approve(), accept({"answer": "yes"}))
    async with client(human) as c:
        outcome = await evaluate(c, CODE)
    return {"outcome": outcome, "asked": [q["fields"] for q in human.asked]}


run(main)
