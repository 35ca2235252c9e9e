"""What a model is shown (tests/mcp/surface.rs): `tools/list` as the Python SDK receives it,
each tool serialised as compact JSON (no whitespace, no null fields), its bytes per tool and in
all; then the errors of the commonest slips, as text. The client cannot elicit."""

import json
import os

from harness import call, connect, evaluate, run

WRONG_KEY = 'return (await codemode.filesystem__read_text_file({filePath: "hello.txt"})).content;'
WRITE = 'await codemode.filesystem__write_file({path: PATH, content: "x"}); return "written";'


async def errors(client) -> dict:
    path = json.dumps(os.path.join(os.environ["CODEMODE_DIR"], "files", "new.txt"))
    out = {}
    for key, tool, code in [
        ("wrong_key", "eval", WRONG_KEY),
        ("readonly_write", "codemode_eval_readonly", WRITE.replace("PATH", path)),
        ("nobody_to_ask", "eval", WRITE.replace("PATH", path)),
    ]:
        result = await evaluate(client, code, tool=tool)
        out[key] = {"text": result["text"], "structured": result["structured"]}
    out["get_unknown"] = (await call(client, "get_tools", {"names": ["filesystem__read_txt_file"]}))["text"]
    try:
        await call(client, "search_tools", {"query": "x", "profile": "nope"})
        out["unknown_profile"] = None
    except Exception as e:  # the JSON-RPC error
        out["unknown_profile"] = str(e)
    return out


async def main() -> dict:
    async with connect() as client:
        listing = await client.list_tools(cache_mode="bypass")
        tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listing.tools]

        def size(value: object) -> int:
            return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())

        return {
            "names": [t["name"] for t in tools],
            "bytes": size(tools),
            "tool_bytes": {t["name"]: size(t) for t in tools},
            "tools": tools,
            "errors": await errors(client) if os.environ.get("SURFACE_ERRORS") else None,
        }


run(main)
