"""What a model reads of an eval (tests/mcp/results.rs): the text block of a 200-call eval with a
large result and a hostile log line, next to its structured content; search_tools' text; the
eval tools' descriptions."""

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


async def main() -> dict:
    async with connect() as client:
        listing = await client.list_tools(cache_mode="bypass")
        descriptions = {t.name: t.description for t in listing.tools}
        result = await evaluate(client, SCRIPT, tool="codemode_eval_sup")
        s = result["structured"]
        search = await call(client, "search_tools", {"query": "current time", "limit": 3})
        return {
            "text": result["text"],
            "text_bytes": len(result["text"].encode()),
            "calls": s["tool_calls"]["count"],
            "structured": s,
            "structured_bytes": len(json.dumps(s, separators=(",", ":"), ensure_ascii=False).encode()),
            "search_text_is_compact": "\n" not in search["text"]
            and json.loads(search["text"]) == search["structured"],
            "descriptions": {k: v for k, v in descriptions.items() if k.startswith("codemode_eval_")},
        }


run(main)
