"""An upstream server killed (SIGKILL) in the middle of a call: the script's call rejects with a
ToolError at once (not after the 10 s operation or the call timeout), a call to another server
made while it is in flight succeeds, and the server is restarted: a later call works again.
The upstream `victim` (server-everything behind `sh -c 'echo $$ > victim.pid; exec node ...'`)
writes its pid to CODEMODE_DIR/victim.pid."""

import asyncio
import os
import signal
import time

from harness import connect, evaluate, log, run

PID_FILE = os.path.join(os.environ["CODEMODE_DIR"], "victim.pid")

MID_CALL = """
const slow = codemode["victim__trigger-long-running-operation"]({ duration: 10, steps: 10 })
  .then((value) => value, (e) => ({ name: e.name, message: e.message }));
const time = await codemode.time__get_current_time({ timezone: "UTC" });
return { time: time.timezone, slow: await slow };
"""

AFTER = 'return await codemode.victim__echo({ message: "back" });'


def read_pid() -> int:
    with open(PID_FILE) as f:
        return int(f.read().strip())


async def main() -> dict:
    out: dict = {}
    async with connect(None) as client:
        first_pid = read_pid()
        call = asyncio.ensure_future(evaluate(client, MID_CALL))
        await asyncio.sleep(1.0)  # the operation is under way (it runs for 10 s)
        os.kill(first_pid, signal.SIGKILL)
        killed_at = time.monotonic()
        out["mid_call"] = await call
        out["seconds_after_kill"] = round(time.monotonic() - killed_at, 3)
        # The server comes back (restart with backoff from 100 ms).
        started = time.monotonic()
        for attempt in range(100):
            out["after"] = await evaluate(client, AFTER)
            if out["after"]["structured"]["ok"]:
                break
            log(f"attempt {attempt}: {out['after']['text']}")
            await asyncio.sleep(0.1)
        out["restart_seconds"] = round(time.monotonic() - started, 3)
        out["restarted_with_new_pid"] = read_pid() != first_pid
    return out


run(main)
