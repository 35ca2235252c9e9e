"""Runs a command in a pseudo-terminal and plays a dialogue with it: for each (WAIT, TYPE) pair,
waits until the screen shows WAIT (a further occurrence of it), then types TYPE and Enter
("^D" = end of input). Prints the whole screen, then exits with the child's exit code.

usage: approve_driver.py WAIT TYPE [WAIT TYPE ...] -- CMD ARGS...
"""
import os
import pty
import select
import sys
import time

split = sys.argv.index("--")
steps = list(zip(sys.argv[1:split:2], sys.argv[2:split:2]))
cmd = sys.argv[split + 1:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(cmd[0], cmd)
out = b""
seen: dict[bytes, int] = {}
deadline = time.time() + 90
while time.time() < deadline:
    if steps:
        wait, typed = steps[0]
        w = wait.encode()
        if out.count(w) > seen.get(w, 0):
            seen[w] = out.count(w)
            steps.pop(0)
            os.write(fd, b"\x04" if typed == "^D" else typed.encode() + b"\n")
    ready, _, _ = select.select([fd], [], [], 0.1)
    if not ready:
        continue
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(status))
