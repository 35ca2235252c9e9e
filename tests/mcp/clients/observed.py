"""get_tools types a tool that declares no result type by what scripts under the same profile
have received from it, and a TypeError on a tool's result names the tool and the result's shape
(tests/mcp/observed.rs). Emits the declarations before and after calls, per profile, and the
failing evals' texts."""

from __future__ import annotations

import asyncio
import os
import time

from harness import EVENT_DEADLINE, call, connect, evaluate, run

NAMES = ["everything__echo", "everything__get-resource-links", "everything__get-structured-content"]

CALLS = """
const e = await codemode.everything__echo({message: "hi"});
const a = await codemode["everything__get-resource-links"]({count: 2});
const b = await codemode["everything__get-resource-links"]({count: 1});
return [e, a.length, b.length];
"""

NOT_A_FUNCTION = """
const links = await codemode["everything__get-resource-links"]({count: 1});
return links.first();
"""

UNDEFINED = """
const links = await codemode["everything__get-resource-links"]({count: 1});
return links.links.map(l => l.uri);
"""

DECLARED = """
const w = await codemode["everything__get-structured-content"]({location: "Chicago"});
return w.split(" ");
"""

CALL_LINKS = """
const links = await codemode["everything__get-resource-links"]({count: 1});
return links.length;
"""


async def declarations(client, **extra) -> str:
    got = await call(client, "get_tools", {"names": NAMES, **extra})
    return got["text"]


async def tool_names(client) -> list[str]:
    return [t.name for t in (await client.list_tools(cache_mode="bypass")).tools]


async def main() -> dict:
    async with connect() as client:
        out: dict = {"before": await declarations(client)}
        ran = await evaluate(client, CALLS)
        out["ran"] = [ran["is_error"], ran["structured"]["result"]]
        out["after"] = await declarations(client)
        # Another profile's scripts have not called them.
        out["other_profile"] = await declarations(client, profile="lenient")
        for label, code in (("not_a_function", NOT_A_FUNCTION), ("undefined", UNDEFINED),
                            ("declared", DECLARED)):
            failed = await evaluate(client, code)
            out[label] = [failed["is_error"], failed["text"]]
        # A reload whose `outputs` rules remove a field starts the tool's observations over:
        # the type must not keep naming what scripts no longer receive. The new config also
        # adds the profile `v2`, whose eval tool tells that it is running.
        config = os.environ["CODEMODE_CONFIG"]
        with open(os.environ["CODEMODE_CONFIG_V2"]) as f, open(config + ".tmp", "w") as g:
            g.write(f.read())
        os.replace(config + ".tmp", config)
        started = time.monotonic()
        while "codemode_eval_v2" not in await tool_names(client):
            if time.monotonic() - started > EVENT_DEADLINE:
                raise TimeoutError("waited for the reload that adds the profile v2")
            await asyncio.sleep(0.1)
        out["reloaded"] = await declarations(client)
        ran = await evaluate(client, CALL_LINKS)
        out["ran_reloaded"] = [ran["is_error"], ran["structured"]["result"]]
        out["after_reload"] = await declarations(client)
    return out



run(main)
