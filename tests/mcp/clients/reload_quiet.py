"""One config change must cause one reload: after CODEMODE_CONFIG_V2 (adds the profile `extra`) is
installed and applied and its notification has come, a quiet period of 2 s must bring no further
tools/list_changed notifications (the watcher must not react to its own reading of the file).
The 2 s are the scenario: the time in which a spurious reload (250 ms debounce) would show."""

import os

import anyio
from mcp.types import ToolListChangedNotification

from harness import connect, log, run, tool_names, wait_until

CONFIG = os.environ["CODEMODE_CONFIG"]


async def main() -> dict:
    notified: list[float] = []

    async def on_message(message) -> None:
        if isinstance(message, ToolListChangedNotification):
            notified.append(anyio.current_time())

    out: dict = {}
    async with connect(None, message_handler=on_message) as client:
        out["protocol"] = client.protocol_version
        async with anyio.create_task_group() as tg:
            if client.protocol_version >= "2026":

                async def listen(*, task_status=anyio.TASK_STATUS_IGNORED) -> None:
                    async with client.listen(tools_list_changed=True) as sub:
                        task_status.started()
                        async for _event in sub:
                            notified.append(anyio.current_time())

                await tg.start(listen)
            # The upstreams are up (see `connect`); their start-up notifications may still be
            # on the way: let them arrive, then count from zero.
            await anyio.sleep(0.5)
            notified.clear()
            with open(os.environ["CODEMODE_CONFIG_V2"]) as f:
                text = f.read()
            with open(CONFIG + ".tmp", "w") as f:
                f.write(text)
            os.replace(CONFIG + ".tmp", CONFIG)
            with anyio.fail_after(20):
                while "codemode_eval_extra" not in await tool_names(client):
                    await anyio.sleep(0.1)
            # The reload's notification follows the swap that the listing showed.
            await wait_until(lambda: notified, "the reload's tools/list_changed notification")
            quiet_from = anyio.current_time()
            await anyio.sleep(2.0)
            out["notified_before_quiet"] = sum(1 for t in notified if t < quiet_from)
            out["notified_while_quiet"] = sum(1 for t in notified if t >= quiet_from)
            log(f"notifications: {len(notified)}")
            tg.cancel_scope.cancel()
    return out


run(main)
