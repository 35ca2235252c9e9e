"""Runs an MCP stdio server with its input tapped, so a test can wait for "the server has
received request X" instead of sleeping:

    python tap.py LOG PIDFILE PROGRAM [ARGS...]

Starts PROGRAM with ARGS, writes its pid to PIDFILE, and forwards every line read from stdin to
it after appending the line to LOG (flushed: the line is in LOG before the server can see it).
The server writes straight to our stdout. When the server exits (or is killed), this process
exits with it, so the client sees the connection close exactly as with the server alone; when
this process is killed, the kernel kills the server too (PR_SET_PDEATHSIG).
"""

import ctypes
import os
import signal
import subprocess
import sys
import threading

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def main() -> None:
    log_path, pid_path, *command = sys.argv[1:]
    server = subprocess.Popen(command, stdin=subprocess.PIPE, preexec_fn=die_with_parent)
    with open(pid_path + ".tmp", "w") as f:
        f.write(f"{server.pid}\n")
    os.replace(pid_path + ".tmp", pid_path)

    def pump() -> None:
        with open(log_path, "ab") as log:
            for line in sys.stdin.buffer:
                log.write(line)
                log.flush()
                try:
                    server.stdin.write(line)
                    server.stdin.flush()
                except BrokenPipeError:
                    return
        server.stdin.close()

    threading.Thread(target=pump, daemon=True).start()
    code = server.wait()
    os._exit(code if code >= 0 else 128 - code)


main()
