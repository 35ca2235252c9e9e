"""Hot reload while connected. The config file is replaced (write + rename, as editors do) by:
  1. CODEMODE_CONFIG_V2: adds the server `fs` (server-filesystem on CODEMODE_DIR/files) and the
     profile `extra` (allowlist fs__*): the new eval tool, namespace and tools appear;
  2. CODEMODE_CONFIG_BAD: invalid (and without `fs`): ignored, everything keeps working;
  3. CODEMODE_CONFIG_V1: the original again: `extra` goes away (the watcher still works).
Also counts the tools/list_changed notifications (legacy: notifications; 2026-07-28:
subscriptions/listen)."""

import json
import os
import re
import time

import anyio
from mcp.types import ToolListChangedNotification

from harness import connect, evaluate, log, run

CONFIG = os.environ["CODEMODE_CONFIG"]
FILES = os.path.join(os.environ["CODEMODE_DIR"], "files")

USE_FS = f"""
const listing = await codemode.fs__list_directory({{ path: {json.dumps(FILES)} }});
let time;
try {{ await codemode.time__get_current_time({{ timezone: "UTC" }}); time = "allowed"; }}
catch (e) {{ time = e.reason; }}
return {{ listing, time }};
"""


def install(source_env: str) -> None:
    with open(os.environ[source_env]) as f:
        text = f.read()
    with open(CONFIG + ".tmp", "w") as f:
        f.write(text)
    os.replace(CONFIG + ".tmp", CONFIG)
    log(f"installed {source_env}")


async def listing(client) -> tuple[list[str], str]:
    """The tool names, and the `Servers: …` sentence of the eval tool's description."""
    tools = (await client.list_tools(cache_mode="bypass")).tools
    description = next(t.description for t in tools if t.name == "eval")
    servers = re.search(r"Servers: [^.]*\.", description)
    return sorted(t.name for t in tools), servers.group(0) if servers else description


async def wait_for(client, predicate, seconds: float = 20.0) -> dict:
    started = time.monotonic()
    while True:
        names, servers = await listing(client)
        if predicate(names, servers) or time.monotonic() - started > seconds:
            return {"tools": names, "servers": servers, "seconds": round(time.monotonic() - started, 3)}
        await anyio.sleep(0.1)


async def main() -> dict:
    notified: list[str] = []

    async def on_message(message) -> None:
        if isinstance(message, ToolListChangedNotification):
            notified.append("tools/list_changed")

    out: dict = {}
    async with connect(None, message_handler=on_message) as client:
        out["protocol"] = client.protocol_version
        async with anyio.create_task_group() as tg:
            if client.protocol_version >= "2026":

                async def listen(*, task_status=anyio.TASK_STATUS_IGNORED) -> None:
                    async with client.listen(tools_list_changed=True) as sub:
                        task_status.started()
                        async for _event in sub:
                            notified.append("tools/list_changed")

                await tg.start(listen)
            out["before"] = await wait_for(client, lambda names, servers: True)

            install("CODEMODE_CONFIG_V2")
            # Ready when the new profile is listed and the new server's tools are in.
            out["v2"] = await wait_for(
                client, lambda names, servers: "codemode_eval_extra" in names and re.search(r"fs \([1-9]", servers)
            )
            out["v2_eval"] = await evaluate(client, USE_FS, "codemode_eval_extra")
            await anyio.sleep(0.3)
            out["notified_after_v2"] = len(notified)

            install("CODEMODE_CONFIG_BAD")
            await anyio.sleep(1.5)  # the watcher debounces 250 ms, then reads and rejects it
            out["bad"] = await wait_for(client, lambda names, servers: True)
            out["bad_eval"] = await evaluate(client, USE_FS, "codemode_eval_extra")

            install("CODEMODE_CONFIG_V1")
            out["v1"] = await wait_for(
                client, lambda names, servers: "codemode_eval_extra" not in names and "fs (" not in servers
            )
            out["v1_eval"] = await evaluate(client, 'await codemode.time__get_current_time({ timezone: "UTC" }); "ok"')
            tg.cancel_scope.cancel()
    return out


run(main)
