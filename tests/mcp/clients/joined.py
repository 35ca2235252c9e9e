"""Identical asks joined, end to end: a script's `Promise.all` of three identical calls (a client
that cannot elicit, so the HTTP approval API is the channel) puts one request to the human.

Observes: once the server counts two calls joined (`codemode_approvals_joined_total` on
`/metrics`), `GET /approvals` lists exactly one pending request; one `approve_once` on it; the
eval's result (three echoes); each call's audit record (approved; the two joined ones naming
the request).
"""

import asyncio
import os
import re

import httpx2 as httpx  # the HTTP client the Python SDK itself uses

from harness import audit_records, connect, evaluate, log, run, wait_until

BASE = os.environ["CODEMODE_URL"].rsplit("/mcp", 1)[0]
CODE = """const same = () => codemode.everything__echo({message: "same"});
return await Promise.all([same(), same(), same()]);"""


async def joined_count(http: httpx.AsyncClient) -> int:
    """`codemode_approvals_joined_total` now."""
    text = (await http.get("/metrics")).text
    found = re.search(r"^codemode_approvals_joined_total (\d+)$", text, re.MULTILINE)
    return int(found.group(1)) if found else -1


async def main() -> dict:
    obs: dict = {}
    async with httpx.AsyncClient(base_url=BASE, timeout=60) as http, connect(None) as client:
        task = asyncio.create_task(evaluate(client, CODE, "codemode_eval_gate"))
        # The event: two calls joined the first one's ask (polled, as Prometheus would).
        deadline = asyncio.get_running_loop().time() + 60
        joined = await joined_count(http)
        while joined < 2 and not task.done() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
            joined = await joined_count(http)
        obs["joined_metric"] = joined
        pending = (await http.get("/approvals")).json()["approvals"]
        log(f"pending: {[p['id'] for p in pending]}")
        obs["pending"] = [[p["tool"], p["args"]] for p in pending]
        request_id = pending[0]["id"]
        r = await http.post(f"/approvals/{request_id}", json={"decision": "approve_once"}, headers={"Origin": BASE})
        obs["approve"] = r.status_code
        obs["result"] = await task
        # The audit writer thread may write the calls' records after the eval's response.
        echoes = lambda: [r for r in audit_records() if r.get("tool") == "everything__echo"]
        await wait_until(lambda: len(echoes()) >= 3, "the three calls' audit records")
        records = echoes()
        obs["audit"] = sorted(
            [r["decision"], r["status"], r.get("joined_ask") == request_id, "joined_ask" in r] for r in records
        )
    return obs


if __name__ == "__main__":
    run(main)
