"""An upstream server killed (SIGKILL) in the middle of a call: the script's call rejects with a
ToolError saying the connection closed (not the 10 s operation's result, nor the call timeout),
a call to another server made while it is in flight succeeds, and the server is restarted: a
later call works again. The upstream `victim` is server-everything behind tests/support/tap.py,
which writes the server's pid to CODEMODE_DIR/victim.pid and logs each request it forwards to
CODEMODE_DIR/victim.requests: the kill waits for the call's request there."""

import asyncio
import os
import signal
import time

from harness import EVENT_DEADLINE, connect, evaluate, log, run, wait_until

PID_FILE = os.path.join(os.environ["CODEMODE_DIR"], "victim.pid")
REQUESTS = os.path.join(os.environ["CODEMODE_DIR"], "victim.requests")

MID_CALL = """
const slow = codemode["victim__trigger-long-running-operation"]({ duration: 10, steps: 10 })
  .then((value) => value, (e) => ({ name: e.name, message: e.message }));
const time = await codemode.time__get_current_time({ timezone: "UTC" });
return { time: time.timezone, slow: await slow };
"""

AFTER = 'return await codemode.victim__echo({ message: "back" });'


def call_received() -> bool:
    """Whether the victim has been sent the long operation's tools/call."""
    try:
        with open(REQUESTS) as f:
            return any('"tools/call"' in l and "trigger-long-running-operation" in l for l in f)
    except FileNotFoundError:
        return False


def read_pid() -> int:
    with open(PID_FILE) as f:
        return int(f.read().strip())


async def main() -> dict:
    out: dict = {}
    async with connect(None) as client:
        first_pid = read_pid()
        call = asyncio.ensure_future(evaluate(client, MID_CALL))
        await wait_until(call_received, "the long operation's call to reach the victim")
        os.kill(first_pid, signal.SIGKILL)
        out["mid_call"] = await call
        # The server comes back (restart with backoff from 100 ms): retry until a call works.
        started = time.monotonic()
        attempt = 0
        while True:
            out["after"] = await evaluate(client, AFTER)
            if out["after"]["structured"]["ok"] or time.monotonic() - started > EVENT_DEADLINE:
                break
            log(f"attempt {attempt}: {out['after']['text']}")
            attempt += 1
            await asyncio.sleep(0.1)
        out["restarted_with_new_pid"] = read_pid() != first_pid
    return out


run(main)
