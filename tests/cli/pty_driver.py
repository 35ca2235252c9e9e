"""Runs a command in a pseudo-terminal and answers its prompts, like a person would.

usage: pty_driver.py ANSWER CMD ARGS...   (ANSWER is typed after each "Type a number" prompt; "" = just
Enter, "-" = type nothing and wait for the countdown)
Prints the child's terminal output, then exits with the child's exit code.
"""
import os
import pty
import select
import sys
import time

answer, cmd = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(cmd[0], cmd)
out = b""
answered = 0
deadline = time.time() + 60
while time.time() < deadline:
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
    if answer != "-" and out.count(b"Type a number") > answered:
        answered += 1
        os.write(fd, answer.encode() + b"\n")
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(status))
