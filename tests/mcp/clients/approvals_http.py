"""The HTTP approval API (`"approvals": {"http": true}` on the `serve --http` listener), driven
by a second HTTP client (httpx2) while an eval of a client that cannot elicit waits on it.

Observes: the SSE `requested` event and `GET /approvals` (the same request, hostile text
neutralised in the summary, full arguments intact), every refusal's status (bad Host, foreign
Origin, no JSON content type, unknown id, unknown decision), the approval (200), the `decided`
event, a second decision (409), the last decisions, and the eval's result.
"""

import asyncio
import json
import os

import httpx2 as httpx  # the HTTP client the Python SDK itself uses

from harness import connect, evaluate, log, run

BASE = os.environ["CODEMODE_URL"].rsplit("/mcp", 1)[0]
CODE = """// a second call site
if (false) { await codemode.time__get_current_time({}); }
return await codemode.everything__echo({message: "hi\\u001b[2K\\nthere", pad: "x".repeat(500)});"""

HITL = 'return await codemode.hitl_request({question: "Deploy\\u001b[2K\\nnow?", options: ["yes", "no"]});'


async def next_event(lines) -> tuple[str, dict]:
    """The next Server-Sent Event: (name, data as JSON)."""
    name, data = "message", []
    async for line in lines:
        if line == "":
            if data:
                return name, json.loads("\n".join(data))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    raise EOFError("the stream ended")


def view(req: dict) -> dict:
    """The fields of a request that do not vary between runs (and checks of those that do)."""
    out = {k: req[k] for k in ("caller", "profile", "tool", "risk", "classification", "args", "args_summary", "call_sites",
                              "allowed_decisions", "reason_required")}
    out["id_is_128_bit_hex"] = len(req["id"]) == 32 and all(c in "0123456789abcdef" for c in req["id"])
    out["times_utc"] = req["requested_at"].endswith("Z") and req["expires_at"].endswith("Z")
    out["timeout_ms"] = req["timeout_ms"]
    for k in ("decision", "decided_by", "reason", "channel"):
        if k in req:
            out[k] = req[k]
    return out


async def main() -> dict:
    origin = BASE
    obs: dict = {}
    async with httpx.AsyncClient(base_url=BASE, timeout=60) as http, connect(None) as client:
        async with http.stream("GET", "/approvals/stream") as stream:
            obs["stream_status"] = stream.status_code
            obs["stream_type"] = stream.headers["content-type"]
            lines = stream.aiter_lines()
            task = asyncio.create_task(evaluate(client, CODE, "codemode_eval_gate"))
            name, req = await next_event(lines)
            log(f"event {name}: {req['id']}")
            obs["requested"] = [name, view(req)]
            listed = (await http.get("/approvals")).json()["approvals"]
            obs["listed_same"] = [r["id"] for r in listed] == [req["id"]]
            url = f"/approvals/{req['id']}"
            ok = {"decision": "approve_once", "reason": "looks fine"}

            async def status(path: str, **kwargs) -> int:
                r = await http.post(path, **kwargs)
                log(f"POST {path} {kwargs.get('headers')}: {r.status_code} {r.text}")
                return r.status_code

            obs["statuses"] = {
                "rebinding_host": await status(url, json=ok, headers={"Host": "evil.example", "Origin": "http://evil.example"}),
                "foreign_origin": await status(url, json=ok, headers={"Origin": "http://evil.example"}),
                "no_origin": await status(url, json=ok),
                "not_json": await status(url, content=json.dumps(ok), headers={"Origin": origin, "Content-Type": "text/plain"}),
                "unknown_id": await status("/approvals/" + "0" * 32, json=ok, headers={"Origin": origin}),
                "unknown_decision": await status(url, json={"decision": "approve_forever"}, headers={"Origin": origin}),
                "approve": await status(url, json=ok, headers={"Origin": origin}),
                "again": await status(url, json=ok, headers={"Origin": origin}),
            }
            name, decided = await next_event(lines)
            obs["decided"] = [name, view(decided)]
            # A hitl_request question travels the same way, with its options.
            hitl = asyncio.create_task(evaluate(client, HITL))
            name, q = await next_event(lines)
            obs["question"] = [name, {k: q.get(k) for k in ("kind", "tool", "options", "args_summary", "risk")}]
            answer_url = f"/approvals/{q['id']}"
            obs["question_statuses"] = {
                "not_an_option": await status(answer_url, json={"decision": "answer", "answer": "maybe"}, headers={"Origin": origin}),
                "answer": await status(answer_url, json={"decision": "answer", "answer": "yes"}, headers={"Origin": origin}),
            }
            name, answered = await next_event(lines)
            obs["answered"] = [name, answered["decision"], answered["answer"], answered["channel"]]
            hitl_result = (await hitl)["structured"]["result"]
            obs["hitl_result"] = {k: hitl_result[k] for k in ("status", "selectedOption", "confirmed", "source")}
        obs["result"] = await task
        obs["pending_after"] = (await http.get("/approvals")).json()["approvals"]
        last = (await http.get("/approvals?state=decided&limit=2")).json()["approvals"]
        obs["last_kinds"] = [d["kind"] for d in last]
        obs["last_decisions"] = [view(d) for d in last if d["kind"] == "approval"]
        obs["bad_state"] = (await http.get("/approvals?state=maybe")).status_code
        page = await http.get("/approvals/ui")
        obs["page"] = [page.status_code, page.headers["content-type"], "<title>codemode approvals</title>" in page.text]
    return obs


if __name__ == "__main__":
    run(main)
