"""Hot reload while connected. The config file is replaced (write + rename, as editors do) by:
  1. CODEMODE_CONFIG_V2: adds the server `fs` (server-filesystem on CODEMODE_DIR/files) and the
     profile `extra` (allowlist fs__*): the new eval tool, namespace and tools appear;
  2. CODEMODE_CONFIG_BAD: invalid (and without `fs`): ignored, everything keeps working;
  3. CODEMODE_CONFIG_V1: the original again: `extra` goes away (the watcher still works).
Also counts the tools/list_changed notifications (legacy: notifications; 2026-07-28:
subscriptions/listen). Every step waits for its event: the listing showing the change, the
notification, the server logging that it rejected the invalid file."""

import json
import os
import re
import time

import anyio
from mcp.types import ToolListChangedNotification

from harness import EVENT_DEADLINE, connect, evaluate, run, server_log_count, wait_until
from harness import install_config as install

# What the server logs when it rejects a changed config (host/src/server/reload.rs).
REJECTED = "changed but is invalid; keeping the running config"

FILES = os.path.join(os.environ["CODEMODE_DIR"], "files")

USE_FS = f"""
const listing = await codemode.fs__list_directory({{ path: {json.dumps(FILES)} }});
let time;
try {{ await codemode.time__get_current_time({{ timezone: "UTC" }}); time = "allowed"; }}
catch (e) {{ time = e.reason; }}
return {{ listing, time }};
"""


async def listing(client) -> tuple[list[str], str]:
    """The tool names, and the `Servers: …` sentence of the eval tool's description."""
    tools = (await client.list_tools(cache_mode="bypass")).tools
    description = next(t.description for t in tools if t.name == "eval")
    servers = re.search(r"Servers: [^.]*\.", description)
    return sorted(t.name for t in tools), servers.group(0) if servers else description


async def wait_for(client, predicate) -> dict:
    """Polls the listing until `predicate(names, servers)` holds, or EVENT_DEADLINE passes (then
    returns the last listing, which the Rust side finds wrong)."""
    started = time.monotonic()
    while True:
        names, servers = await listing(client)
        if predicate(names, servers) or time.monotonic() - started > EVENT_DEADLINE:
            return {"tools": names, "servers": servers}
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
            # The server notifies right after swapping the config in (which the listing showed).
            await wait_until(lambda: notified, "a tools/list_changed notification")
            out["notified_after_v2"] = len(notified)

            rejected_before = server_log_count(REJECTED)
            install("CODEMODE_CONFIG_BAD")
            await wait_until(lambda: server_log_count(REJECTED) > rejected_before, "the invalid config's rejection")
            out["rejected"] = server_log_count(REJECTED) - rejected_before
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
