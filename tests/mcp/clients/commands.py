"""Command tools through `codemode serve` (tests/mcp/commands.rs): discovery lists them with
their description and schema; an eval passes hostile values that arrive as one literal argument
each, has an option-like value refused and gets a non-zero exit's data; a profile denies one; a
hot reload adds one (CODEMODE_CONFIG_V2), which a new eval can call."""

from __future__ import annotations

import asyncio
import json
import os
import time

from harness import EVENT_DEADLINE, call, connect, evaluate, install_config, run

FILES = os.path.join(os.environ["CODEMODE_DIR"], "files")

SCRIPT = f"""
const dir = {json.dumps(FILES)};
const outcome = async (f) => {{ try {{ return {{ok: await f()}}; }}
  catch (e) {{ return {{name: e.name, message: e.message, data: e.data ?? null}}; }} }};
return {{
  hostile: await codemode.argv({{a: `$(touch ${{dir}}/X)`, b: "a; b\\n'c' \\"d\\" | e"}}),
  option: await outcome(() => codemode.argv({{a: "--upload-pack=touch X"}})),
  fail: await outcome(() => codemode.fail()),
}};
"""


async def search(client, query: str) -> list[str]:
    found = await call(client, "search_tools", {"query": query})
    return [h["name"] for h in found["structured"]["results"]]


async def main() -> dict:
    out: dict = {}
    async with connect() as client:
        out["search"] = (await search(client, "echo each argument"))[:1]
        got = await call(client, "get_tools", {"names": ["argv"]})
        out["declaration"] = got["structured"]["declarations"]
        result = await evaluate(client, SCRIPT)
        out["eval"] = result["structured"]["result"]
        denied = await evaluate(
            client,
            "try { await codemode.fail(); return 'ran'; } catch (e) { return [e.name, e.toolName]; }",
            tool="codemode_eval_p",
        )
        out["denied"] = denied["structured"]["result"]
        out["files"] = sorted(os.listdir(FILES))

        install_config("CODEMODE_CONFIG_V2")
        started = time.monotonic()
        while "added" not in await search(client, "added by reload"):
            if time.monotonic() - started > EVENT_DEADLINE:
                raise TimeoutError("the reloaded command never appeared")
            await asyncio.sleep(0.1)
        added = await evaluate(client, "return await codemode.added({word: 'reloaded'})")
        out["added"] = added["structured"]["result"]
    return out


run(main)
