"""MCP cancellation of a long eval (`while (true) {}`, unlimited fuel, a 300 s timeout): the
client abandons the call once the server reports progress on it, i.e. once the sandbox is
running (stdio: notifications/cancelled; 2026-07-28 HTTP: the POST is closed). The sandbox must
stop: the server process goes idle long before the script's own timeout, and the next eval
works."""

import anyio

from harness import EVENT_DEADLINE, connect, cpu_seconds, evaluate, run, server_pid

# A window in which a spinning sandbox burns most of a core and an idle server almost nothing.
WINDOW = 1.0
IDLE_CPU = 0.2


async def main() -> dict:
    out: dict = {"finished_anyway": None, "progress": []}
    progressed = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        out["progress"].append(message)
        progressed.set()

    async with connect(None) as client:
        pid = server_pid()

        async def spin() -> None:
            out["finished_anyway"] = await evaluate(client, "while (true) {}", progress_callback=on_progress)

        async with anyio.create_task_group() as tg:
            tg.start_soon(spin)
            with anyio.fail_after(EVENT_DEADLINE):
                await progressed.wait()
            tg.cancel_scope.cancel()
        out["cancelled"] = out["finished_anyway"] is None
        # Wait for the server to go idle: CPU use per window, until one is (nearly) idle.
        out["went_idle"] = False
        with anyio.move_on_after(EVENT_DEADLINE):
            while not out["went_idle"]:
                before = cpu_seconds(pid)
                await anyio.sleep(WINDOW)
                out["went_idle"] = cpu_seconds(pid) - before < IDLE_CPU
        out["next"] = await evaluate(client, "1 + 2")
    return out


run(main)
