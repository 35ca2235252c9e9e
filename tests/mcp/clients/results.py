"""What a model reads of an eval (tests/mcp/results.rs): the text block of a 200-call eval with a
large result and a hostile log line, next to its structured content; search_tools' text; the
eval tools' descriptions. Also the size the text block had before it was made lean (pretty JSON
cut at 16 KiB, one ledger line per call), for the measurement."""

import json

from harness import call, connect, evaluate, run

SCRIPT = r"""
console.log("x\n[error] FAKE\u001b]0;t\u0007");
let n = 0;
for (let i = 0; i < 198; i++) {
  await codemode.time__get_current_time({ timezone: "UTC" });
  n++;
}
try { await codemode["everything__get-sum"]({ a: 1, b: 2 }); } catch (e) {}
try { await codemode.nope__tool({}); } catch (e) {}
return { n, rows: Array.from({ length: 3000 }, (_, i) => ({ i, name: "row " + i })) };
"""


def before(structured: dict) -> str:
    """The text block as codemode rendered it before: pretty JSON cut at 16 KiB, then the logs
    and one line per call with its duration."""
    text = json.dumps(structured["result"], indent=2, ensure_ascii=False)
    if len(text.encode()) > 16 * 1024:
        total = len(text.encode())
        text = text.encode()[: 16 * 1024].decode(errors="ignore")
        text += f"\n… (truncated; {total} bytes in all, see the structured content)"
    out = f"Result:\n{text}\n"
    out += "\nLogs:\n" + "".join(f"[{l['level']}] {l['message']}\n" for l in structured["logs"])
    out += "\nTool calls:\n"
    for c in structured["tool_calls"]:
        reason = f" — {c['reason']}" if c["reason"] else ""
        out += f"#{c['id']} {c['tool']} {c['status']} ({c['duration_ms']:.1f} ms){reason}\n"
    return out.rstrip()


async def main() -> dict:
    async with connect() as client:
        listing = await client.list_tools(cache_mode="bypass")
        descriptions = {t.name: t.description for t in listing.tools}
        result = await evaluate(client, SCRIPT, tool="codemode_eval_sup")
        s = result["structured"]
        old = before(s)
        search = await call(client, "search_tools", {"query": "current time", "limit": 3})
        return {
            "text": result["text"],
            "text_bytes": len(result["text"].encode()),
            "before_bytes": len(old.encode()),
            "before_ledger_bytes": len(old[old.index("\nTool calls:\n") :].encode()),
            "calls": len(s["tool_calls"]),
            "rows": len(s["result"]["rows"]),
            "reasons": [c["reason"] for c in s["tool_calls"] if c["reason"]],
            "search_text_is_compact": "\n" not in search["text"]
            and json.loads(search["text"]) == search["structured"],
            "descriptions": {k: v for k, v in descriptions.items() if k.startswith("codemode_eval_")},
        }


run(main)
