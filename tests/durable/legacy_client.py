"""A legacy (2025-11-25) MCP session through HAProxy, on the real Python SDK (`mcp` 2.3): the
session's requests, its standalone stream and its answer to the server's `elicitation/create`
must all reach the node that holds the session (tests/durable/legacy.rs).

Environment:
  DURABLE_URL   HAProxy's MCP endpoint
  DURABLE_CODE  the script, run with `codemode_eval_gate`
  DURABLE_DIR   a directory for marker files
  DURABLE_FLOW  "complete": the human approves at once;
                "node_dies": the human writes DURABLE_DIR/asked, waits for DURABLE_DIR/go
                (meanwhile the test kills the session's node), then approves; afterwards the
                client tries one more request in the same session;
                "parked": the human writes DURABLE_DIR/asked, waits for DURABLE_DIR/go
                (meanwhile the node saves the eval to the store), then approves;
                "question": as "parked", for a `hitl_request` question: the human answers
                the option `ship`;
                "cancel": the human writes DURABLE_DIR/asked and never answers; when
                DURABLE_DIR/cancel appears the client abandons the call (the SDK sends
                `notifications/cancelled`), writes DURABLE_DIR/cancelled, and keeps the
                session open until DURABLE_DIR/done appears.

Prints one JSON object of observations on stdout.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from mcp import Client
from mcp.types import ElicitResult

URL = os.environ["DURABLE_URL"]
CODE = os.environ["DURABLE_CODE"]
DIR = os.environ["DURABLE_DIR"]
FLOW = os.environ["DURABLE_FLOW"]
# Longest the client waits for anything (the test's own deadline is longer).
DEADLINE = 60.0


def log(message: str) -> None:
    print(f"[legacy client] {message}", file=sys.stderr, flush=True)


class Human:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, _ctx: Any, params: Any) -> ElicitResult:
        self.asked.append(params.message.splitlines()[0])
        log(f"asked: {params.message.splitlines()[0]!r}")
        if FLOW in ("node_dies", "parked", "question"):
            open(os.path.join(DIR, "asked"), "w").close()
            started = time.monotonic()
            while not os.path.exists(os.path.join(DIR, "go")):
                if time.monotonic() - started > DEADLINE:
                    raise TimeoutError("the test never said go")
                await asyncio.sleep(0.05)
        if FLOW == "cancel":
            open(os.path.join(DIR, "asked"), "w").close()
            await wait_for_marker("done")
            return ElicitResult(action="cancel")
        if FLOW == "question":
            return ElicitResult(action="accept", content={"answer": "ship"})
        return ElicitResult(action="accept", content={"decision": "approve_once"})


async def wait_for_marker(name: str) -> None:
    started = time.monotonic()
    while not os.path.exists(os.path.join(DIR, name)):
        if time.monotonic() - started > DEADLINE:
            raise TimeoutError(f"the test never wrote {name}")
        await asyncio.sleep(0.05)


def text_of(result: Any) -> str:
    return "\n".join(b.text for b in result.content if getattr(b, "type", None) == "text")


async def attempt(what: str, coro: Any) -> dict:
    """Runs `coro`; returns {"ok": value} or {"error": "Type: message"} (or a timeout)."""
    try:
        return {"ok": await asyncio.wait_for(coro, DEADLINE)}
    except asyncio.TimeoutError:
        return {"error": f"no answer within {DEADLINE} s"}
    except Exception as e:  # noqa: BLE001 - what the SDK raises is the observation
        log(f"{what} failed: {type(e).__name__}: {e}")
        return {"error": f"{type(e).__name__}: {e}"}


async def call_gate(client: Client) -> dict:
    result = await client.call_tool("codemode_eval_gate", {"code": CODE})
    return {"is_error": bool(result.is_error), "structured": result.structured_content, "text": text_of(result)}


async def main() -> dict:
    human = Human()
    observations: dict = {}
    client = Client(URL, mode="legacy", elicitation_callback=human)
    try:
        async with client as c:
            observations["protocol"] = c.protocol_version
            if FLOW == "cancel":
                call = asyncio.create_task(call_gate(c))
                await wait_for_marker("cancel")
                call.cancel()
                try:
                    await call
                    observations["call"] = "answered before the cancellation"
                except asyncio.CancelledError:
                    observations["call"] = "cancelled"
                open(os.path.join(DIR, "cancelled"), "w").close()
                await wait_for_marker("done")
            else:
                observations["call"] = await attempt("tools/call", call_gate(c))
            if FLOW == "node_dies":
                listed = await attempt("tools/list", c.list_tools(cache_mode="bypass"))
                observations["after"] = (
                    {"ok": sorted(t.name for t in listed["ok"].tools)} if "ok" in listed else listed
                )
    except BaseException as e:  # noqa: BLE001 - closing a session on a dead node may raise
        observations["closing"] = f"{type(e).__name__}: {e}"
    observations["asked"] = human.asked
    return observations


print(json.dumps(asyncio.run(main()), sort_keys=True, default=str), flush=True)
