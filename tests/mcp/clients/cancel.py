"""MCP cancellation of a long eval (`while (true) {}` under the default 30 s timeout): the client
abandons the call after 1 s (stdio: notifications/cancelled; 2026-07-28 HTTP: the POST is
closed). The sandbox must stop at once: the server process goes idle, and the next eval answers
promptly."""

import time

import anyio

from harness import connect, cpu_seconds, evaluate, run, server_pid


async def main() -> dict:
    out: dict = {}
    async with connect(None) as client:
        pid = server_pid()
        started = time.monotonic()
        out["finished_anyway"] = None
        with anyio.move_on_after(1.0) as scope:
            out["finished_anyway"] = await evaluate(client, "while (true) {}")
        out["cancelled"] = scope.cancelled_caught
        out["cancel_seconds"] = round(time.monotonic() - started, 3)
        # Let the cancellation reach the server, then measure its CPU use over one second:
        # a sandbox still spinning would burn about a full second of it.
        await anyio.sleep(0.5)
        cpu_before = cpu_seconds(pid)
        await anyio.sleep(1.0)
        out["cpu_seconds_in_1s_after"] = round(cpu_seconds(pid) - cpu_before, 3)
        out["next"] = await evaluate(client, "1 + 2")
    return out


run(main)
