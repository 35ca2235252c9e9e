"""Approver rights by risk over real bearer tokens (tests/mcp/rights.rs).

The profile `gate` allows `everything__echo` but rates it critical, and critical calls need
approval (`requireApproval`) by a holder of `approve:critical` (`approvers`). The agent
(AGENT_TOKEN: `approve`) runs the eval through a client that can elicit: its prompt says it
cannot approve and offers only to withdraw; the agent's human dismisses it and the ask waits. The
operator (OPS_TOKEN: `approve`) sees the ask, marked not decidable, and is refused; the lead
(LEAD_TOKEN: `approve`, `approve:critical`) approves it. Emits what each saw and the eval's result.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import httpx2 as httpx  # the HTTP client the Python SDK itself uses
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import ElicitResult

from harness import Client, MODE, evaluate, log, run

URL = os.environ["CODEMODE_AUTH_URL"]
BASE = URL.rsplit("/mcp", 1)[0]
AGENT = {"Authorization": f"Bearer {os.environ['AGENT_TOKEN']}"}
OPS = {"Authorization": f"Bearer {os.environ['OPS_TOKEN']}"}
LEAD = {"Authorization": f"Bearer {os.environ['LEAD_TOKEN']}"}
CODE = 'return await codemode.everything__echo({message: "deploy"});'


class Dismisses:
    """The agent's human: records each prompt (its last paragraph and the decisions offered) and
    dismisses it."""

    def __init__(self) -> None:
        self.prompts: list[dict] = []
        self.asked = asyncio.Event()

    async def __call__(self, _ctx: Any, params: Any) -> ElicitResult:
        schema = params.requested_schema
        if not isinstance(schema, dict):
            schema = schema.model_dump(by_alias=True, exclude_none=True)
        offered = [o["const"] for o in schema["properties"]["decision"].get("oneOf", [])]
        self.prompts.append({"last": params.message.split("\n\n")[-1], "offered": offered})
        log(f"the agent's human was asked: {params.message!r}")
        self.asked.set()
        return ElicitResult(action="cancel")


async def pending(http: httpx.AsyncClient, headers: dict) -> list[dict]:
    """Waits (60 s at most) until the API lists a pending ask."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listed = (await http.get("/approvals", headers=headers)).json()["approvals"]
        if listed:
            return listed
        await asyncio.sleep(0.05)
    raise TimeoutError("no ask reached the approval API")


async def until_file(path: str) -> None:
    """Waits (120 s at most) until `path` exists."""
    deadline = time.monotonic() + 120
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        await asyncio.sleep(0.05)


async def main() -> dict:
    obs: dict = {}
    human = Dismisses()
    transport = streamable_http_client(URL, http_client=create_mcp_http_client(headers=AGENT))
    async with httpx.AsyncClient(base_url=BASE, timeout=60) as http, Client(
        transport, mode=MODE, elicitation_callback=human
    ) as client:
        task = asyncio.create_task(evaluate(client, CODE, "codemode_eval_gate"))
        seen = (await pending(http, OPS))[0]
        obs["ops_sees"] = {k: seen.get(k) for k in ("caller", "tool", "risk", "approvers", "decidable", "cannot_decide")}
        lead_sees = (await pending(http, LEAD))[0]
        obs["lead_sees"] = {k: lead_sees.get(k) for k in ("decidable", "cannot_decide")}
        # Dismissed, the ask still waits: the lead's decision below still finds it.
        await asyncio.wait_for(human.asked.wait(), 60)
        # The prompt names the request (its id is random: shown as ID).
        prompt = human.prompts[0]
        obs["agent_prompt"] = {"last": prompt["last"].replace(seen["id"], "ID"), "offered": prompt["offered"]}
        url = f"/approvals/{seen['id']}"
        # When the approval page watches too (tests/mcp/browser.rs), the lead decides only once
        # the page has shown the ask to the operator.
        if os.environ.get("PAGE_SAW"):
            await until_file(os.environ["PAGE_SAW"])
        refused = await http.post(url, json={"decision": "approve_once"}, headers=OPS)
        obs["ops_decides"] = [refused.status_code, refused.json()]
        approved = await http.post(url, json={"decision": "approve_once"}, headers=LEAD)
        obs["lead_decides"] = [approved.status_code, approved.json()]
        result = await task
        obs["result"] = {k: result["structured"][k] for k in ("ok", "result")}
        last = (await http.get("/approvals?state=decided&limit=1", headers=OPS)).json()["approvals"][0]
        obs["decided"] = {k: last.get(k) for k in ("decision", "decided_by", "decided_with", "channel")}
    return obs


run(main)
