"""`codemode serve` answers at once while its upstreams start in the background.

Upstreams (see tests/mcp/startup.rs): `slow` is mcp-server-time behind a gate, a shell loop
that waits for the file CODEMODE_DIR/gate before it `exec`s the server, so it cannot be up
before this client creates the file; `broken` writes a line (with an escape sequence) to its
stderr and exits 1. The client records the ORDER of events:

  1. `initialized`: the connection is up (the gate does not exist yet, so `slow` cannot be);
     the eval tool's description then lists `slow (starting)`; an eval calling
     `slow__get_current_time` is sent;
  2. `gate_opened`, once `time` is up and `broken` down, with the eval still waiting;
     the eval then succeeds;
  3. `list_changed`: the first tools/list_changed notification after the gate (slow came up);
  4. `tool_listed`: the description lists `slow (2 tools)`.
The same call under the profile `asks` (asklist slow__*, no human to ask → deny) made while
`slow` is starting is denied: the profile decides it once slow's tools are known, it is not
waved through as a call to an unknown tool.
`broken` is listed as down with its neutralised last stderr line, and `search_tools` (as an MCP
tool and from a script) reports it under `unavailable`.
"""

import asyncio
import os
import re

from mcp.types import ToolListChangedNotification

from harness import call, connect, evaluate, log, run, wait_until

GATE = os.path.join(os.environ["CODEMODE_DIR"], "gate")

CALL_SLOW = 'return (await codemode.slow__get_current_time({ timezone: "UTC" })).timezone;'
ASKED_SLOW = """
try { await codemode.slow__get_current_time({ timezone: "UTC" }); return "ran without asking"; }
catch (e) { return { name: e.name, reason: e.reason }; }
"""
SEARCH_IN_SCRIPT = 'const r = await codemode.search_tools({ query: "time" }); return r.unavailable;'


async def servers(client) -> str:
    """The `Servers: …` sentence of the eval tool's description."""
    tools = (await client.list_tools(cache_mode="bypass")).tools
    description = next(t.description for t in tools if t.name == "eval")
    found = re.search(r"Servers: .*?\)\.", description)
    return found.group(0) if found else description


async def main() -> dict:
    events: list[str] = []
    notified = [0]
    out: dict = {}

    async def on_message(message) -> None:
        if isinstance(message, ToolListChangedNotification):
            notified[0] += 1

    async with connect(None, ready=False, message_handler=on_message) as client:
        events.append("initialized")
        assert not os.path.exists(GATE)
        out["servers_at_start"] = await servers(client)
        slow_call = asyncio.ensure_future(evaluate(client, CALL_SLOW))
        # Under `asks` (which asks about slow__*; this client cannot be asked, so: deny), the
        # call must be decided once slow's tools are known, not waved through as unknown.
        asked_call = asyncio.ensure_future(evaluate(client, ASKED_SLOW, "codemode_eval_asks"))
        # `time` comes up and `broken` goes down meanwhile (each with its own notification).
        for _ in range(2400):
            listed = await servers(client)
            if "time (2 tools)" in listed and "broken (down:" in listed:
                break
            await asyncio.sleep(0.05)
        out["servers_before_gate"] = listed
        # A tool of a server that is down is not called unknown; one of a server still starting
        # is declared once the server is up (the call waits for it).
        out["get_broken"] = (await call(client, "get_tools", {"names": ["broken__run"]}))["text"]
        get_slow = asyncio.ensure_future(
            call(client, "get_tools", {"names": ["slow__get_current_time"]}))
        assert not slow_call.done(), "the call to slow finished before slow could start"
        assert not asked_call.done(), "the asked call to slow finished before slow could start"
        assert not get_slow.done(), "get_tools of slow's tool finished before slow could start"
        before_gate = notified[0]
        open(GATE, "w").close()
        events.append("gate_opened")
        out["slow_call"] = await slow_call
        out["asked_call"] = (await asked_call)["structured"].get("result")
        out["get_slow"] = (await get_slow)["text"]
        await wait_until(lambda: notified[0] > before_gate, "tools/list_changed after the gate")
        events.append("list_changed")
        while "slow (2 tools)" not in await servers(client):
            await asyncio.sleep(0.05)
        events.append("tool_listed")
        out["events"] = events

        found = await call(client, "search_tools", {"query": "time"})
        out["search_unavailable"] = found["structured"].get("unavailable")
        out["search_hits"] = [r["name"] for r in found["structured"]["results"]]
        hidden = await call(client, "search_tools", {"query": "time", "profile": "nobroken"})
        out["search_unavailable_nobroken"] = hidden["structured"].get("unavailable")
        in_script = await evaluate(client, SEARCH_IN_SCRIPT)
        out["search_in_script"] = in_script["structured"].get("result")
        log(f"events: {out['events']}")
    return out


run(main)
