"""The HTTP approval API behind real bearer-token authentication (tests/mcp/auth.rs).

An agent (token AGENT_TOKEN: permission `approve`, not `approve_self`) runs an eval whose call
the profile asks about; its client cannot elicit, so the ask waits on the HTTP API. A second
HTTP client then tries to decide it: without a token, as the agent itself (its own ask), and as
the operator (OPS_TOKEN: `approve`). Emits the statuses, the pending request's caller, the
decision as recorded, and the eval's result.
"""

from __future__ import annotations

import asyncio
import os
import time

import httpx2 as httpx  # the HTTP client the Python SDK itself uses

from harness import Client, MODE, evaluate, log, run
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

URL = os.environ["CODEMODE_AUTH_URL"]
BASE = URL.rsplit("/mcp", 1)[0]
AGENT = {"Authorization": f"Bearer {os.environ['AGENT_TOKEN']}"}
OPS = {"Authorization": f"Bearer {os.environ['OPS_TOKEN']}"}
CODE = 'return await codemode.everything__echo({message: "deploy"});'


async def pending(http: httpx.AsyncClient) -> list[dict]:
    """Waits (60 s at most) until the API lists a pending ask, as the operator sees it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listed = (await http.get("/approvals", headers=OPS)).json()["approvals"]
        if listed:
            return listed
        await asyncio.sleep(0.05)
    raise TimeoutError("no ask reached the approval API")


async def main() -> dict:
    obs: dict = {}
    agent_http = create_mcp_http_client(headers=AGENT)
    transport = streamable_http_client(URL, http_client=agent_http)
    async with httpx.AsyncClient(base_url=BASE, timeout=60) as http, Client(transport, mode=MODE) as client:
        task = asyncio.create_task(evaluate(client, CODE, "codemode_eval_gate"))
        obs["list_without_token"] = (await http.get("/approvals")).status_code
        listed = await pending(http)
        req = listed[0]
        obs["pending"] = {k: req[k] for k in ("caller", "profile", "tool", "risk")}
        url = f"/approvals/{req['id']}"
        ok = {"decision": "approve_once", "reason": "reviewed"}

        async def status(headers: dict) -> int:
            r = await http.post(url, json=ok, headers=headers)
            log(f"POST {url} as {headers.get('Authorization', 'nobody')[:14]}: {r.status_code} {r.text}")
            return r.status_code

        obs["statuses"] = {
            "no_token": await status({}),
            "own_ask": await status(AGENT),
            "operator": await status(OPS),
            "again": await status(OPS),
        }
        result = await task
        obs["result"] = {k: result["structured"][k] for k in ("ok", "result")}
        last = (await http.get("/approvals?state=decided&limit=1", headers=OPS)).json()["approvals"]
        obs["decided"] = {k: last[0][k] for k in ("caller", "decision", "decided_by", "reason", "channel")}
    return obs


run(main)
