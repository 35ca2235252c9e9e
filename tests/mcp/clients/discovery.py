"""search_tools and get_tools as MCP tools show only what a profile may call
(tests/mcp/discovery.rs). Emits what each call returned (names, marks, missing) and the error of
an unknown profile."""

from __future__ import annotations

from harness import call, connect, run


async def main() -> dict:
    async with connect() as client:
        out: dict = {}
        for label, extra in (("none", {}), ("sup", {"profile": "sup"})):
            found = await call(client, "search_tools", {"query": "sum echo numbers message", "limit": 50, **extra})
            hits = found["structured"]["results"]
            out[f"search_{label}"] = sorted(
                [h["name"], bool(h.get("needsApproval"))] for h in hits if h["name"].startswith("everything__")
                and h["name"] in ("everything__get-sum", "everything__echo")
            )
            got = await call(
                client, "get_tools", {"names": ["everything__get-sum", "everything__echo"], **extra}
            )
            s = got["structured"]
            out[f"get_{label}"] = {
                "declares_sum": "everything__get-sum" in s["declarations"],
                "declares_echo": "everything__echo" in s["declarations"],
                "missing": [m["name"] for m in s["missing"]],
                "needsApproval": s.get("needsApproval"),
            }
        try:
            await call(client, "search_tools", {"query": "x", "profile": "nope"})
            out["unknown_profile"] = "no error"
        except Exception as e:  # the SDK raises the JSON-RPC error
            err = getattr(e, "error", None)
            out["unknown_profile"] = [getattr(err, "code", None), getattr(err, "message", str(e))]
    return out


run(main)
