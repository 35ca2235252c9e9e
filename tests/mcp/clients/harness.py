"""Shared helpers for the end-to-end clients of `codemode serve` (Python SDK `mcp` 2.3).

The Rust test (tests/mcp/main.rs) runs one client script per scenario with the environment:

  CODEMODE_MODE     "auto" (2026-07-28 via server/discover) or "legacy" (initialize, 2025-11-25)
  CODEMODE_URL      http://127.0.0.1:PORT/mcp of a running `codemode serve --http`, or unset for stdio:
  CODEMODE_BIN      the codemode binary, started as `codemode serve --config CODEMODE_CONFIG`
  CODEMODE_CONFIG   the config file
  CODEMODE_DIR      the test's scratch directory

and the script prints ONE JSON object of observations on stdout (see `emit`); the Rust side
asserts on it. Everything else (diagnostics, codemode's own stderr) goes to stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import ElicitResult

MODE = os.environ.get("CODEMODE_MODE", "auto")


def server_log() -> str:
    """The server's stderr, on both transports: `CODEMODE_DIR/server.log` (the Rust harness
    starts an HTTP server with it; `target` sends a stdio server's there)."""
    return os.path.join(os.environ["CODEMODE_DIR"], "server.log")


def target() -> StdioServerParameters | str:
    """What `Client` connects to: the HTTP URL, or the stdio command (`exec`ed by `sh`, only to
    append its stderr to `server_log()`: its pid and argv are codemode's)."""
    url = os.environ.get("CODEMODE_URL")
    if url:
        return url
    # CODEMODE_STATE_DIR too: the stdio server's store (parked evals, logins, remembered rules)
    # stays in the test's scratch directory, never in $HOME.
    kept = ("PATH", "HOME", "RUST_LOG", "RUST_BACKTRACE", "CODEMODE_STATE_DIR")
    env = {k: v for k, v in os.environ.items() if k in kept}
    env["CODEMODE_SERVER_LOG"] = server_log()
    return StdioServerParameters(
        command="sh",
        args=[
            "-c",
            'exec "$0" "$@" 2>>"$CODEMODE_SERVER_LOG"',
            os.environ["CODEMODE_BIN"],
            "serve",
            "--config",
            os.environ["CODEMODE_CONFIG"],
        ],
        env=env,
    )


def server_log_count(text: str) -> int:
    """How many lines of the server log so far contain `text`."""
    try:
        with open(server_log(), errors="replace") as f:
            return sum(1 for line in f if text in line)
    except FileNotFoundError:
        return 0


def connect(human: Human | None = None, ready: bool = True, **kwargs: Any) -> Any:
    """A client in CODEMODE_MODE; with a `human`, it declares elicitation and answers with it.

    `codemode serve` answers at once and starts its upstream servers in the background; with
    `ready` (the default) entering the client also waits until no listed server is still
    starting, so a scenario begins with its upstreams up (or down)."""
    if human is not None:
        kwargs["elicitation_callback"] = human
    client = Client(target(), mode=MODE, **kwargs)
    return Ready(client) if ready else client


class Ready:
    """`async with Ready(client) as c`: enters `client`, then waits for its upstreams."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def __aenter__(self) -> Client:
        client = await self.client.__aenter__()
        await wait_upstreams(client)
        return client

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.client.__aexit__(*exc)


async def wait_upstreams(client: Client, deadline: float = 60.0) -> None:
    """Polls tools/list until no tool description lists a server as `(starting)`."""
    started = time.monotonic()
    while True:
        tools = (await client.list_tools(cache_mode="bypass")).tools
        if not any("(starting)" in (t.description or "") for t in tools):
            return
        if time.monotonic() - started > deadline:
            raise TimeoutError(f"waited {deadline} s for the upstream servers to start")
        await asyncio.sleep(0.05)


def approve(decision: str = "approve_once", delay: float = 0.0, after: Any = None) -> dict:
    """A scripted answer to the approval form; with `after` (an async function), given only
    once `after()` has returned."""
    return {"action": "accept", "content": {"decision": decision}, "delay": delay, "after": after}


def accept(content: dict, delay: float = 0.0) -> dict:
    """A scripted answer accepting a form with `content`."""
    return {"action": "accept", "content": content, "delay": delay}


def decline(delay: float = 0.0) -> dict:
    return {"action": "decline", "delay": delay}


class Human:
    """An elicitation callback that answers from a script of answers, in order, and records
    every question (message and form fields). With no answer left it declines."""

    def __init__(self, *answers: dict, name: str = "human") -> None:
        self.name = name
        self.answers = list(answers)
        self.asked: list[dict] = []

    async def __call__(self, _ctx: Any, params: Any) -> ElicitResult:
        schema = getattr(params, "requested_schema", None) or {}
        if not isinstance(schema, dict):
            schema = schema.model_dump(by_alias=True, exclude_none=True)
        self.asked.append({"message": params.message, "fields": sorted(schema.get("properties", {}))})
        answer = self.answers.pop(0) if self.answers else decline()
        log(f"{self.name} asked: {params.message.splitlines()[0]!r} -> {answer}")
        if answer.get("delay"):
            await asyncio.sleep(answer["delay"])
        if answer.get("after"):
            await answer["after"]()
        return ElicitResult(action=answer["action"], content=answer.get("content"))


def text_of(result: Any) -> str:
    """The text blocks of a tool result, joined."""
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")


async def call(client: Client, tool: str, args: dict, **kwargs: Any) -> dict:
    """Calls a tool; returns {is_error, structured, text, seconds}."""
    started = time.monotonic()
    result = await client.call_tool(tool, args, **kwargs)
    return {
        "is_error": bool(result.is_error),
        "structured": result.structured_content,
        "text": text_of(result),
        "seconds": round(time.monotonic() - started, 3),
    }


async def evaluate(client: Client, code: str, tool: str = "eval", **kwargs: Any) -> dict:
    """Runs `code` with an eval tool; returns `call`'s observation."""
    return await call(client, tool, {"code": code}, **kwargs)


async def error_of(coro) -> str:
    """The message of the error `coro` raises (the SDK raises MCPError with the server's
    message), or "no error"."""
    try:
        await coro
    except Exception as e:
        return str(e)
    return "no error"


async def tool_names(client: Client) -> list[str]:
    """The listed tool names (never served from the SDK's response cache)."""
    listing = await client.list_tools(cache_mode="bypass")
    return [t.name for t in listing.tools]


# How long `wait_until` waits for an event before it fails the client: generous, as it only
# ends a run whose event never comes (the machines are busy).
EVENT_DEADLINE = 60.0


def install_config(source_env: str) -> None:
    """Replaces the server's config file (CODEMODE_CONFIG) by the one named in `source_env`,
    written beside it and renamed over it, as editors do."""
    config = os.environ["CODEMODE_CONFIG"]
    with open(os.environ[source_env]) as f:
        text = f.read()
    with open(config + ".tmp", "w") as f:
        f.write(text)
    os.replace(config + ".tmp", config)
    log(f"installed {source_env}")


async def wait_until(predicate: Any, what: str, deadline: float = EVENT_DEADLINE) -> None:
    """Polls `predicate()` (every 50 ms) until it is true; raises when `deadline` seconds pass
    first (the event never came)."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > deadline:
            raise TimeoutError(f"waited {deadline} s for {what}")
        await asyncio.sleep(0.05)


async def wait_event(event: asyncio.Event, what: str, deadline: float = EVENT_DEADLINE) -> None:
    """Waits for `event`; raises when `deadline` seconds pass first."""
    try:
        await asyncio.wait_for(event.wait(), deadline)
    except asyncio.TimeoutError:
        raise TimeoutError(f"waited {deadline} s for {what}") from None


def audit_records() -> list[dict]:
    """The records of the audit log so far (`CODEMODE_DIR/audit/*.jsonl`, as configured by
    `base_config`); each line is written whole by one write."""
    audit = os.path.join(os.environ["CODEMODE_DIR"], "audit")
    records: list[dict] = []
    if os.path.isdir(audit):
        for name in sorted(os.listdir(audit)):
            if name.endswith(".jsonl"):
                with open(os.path.join(audit, name)) as f:
                    records.extend(json.loads(line) for line in f if line.strip())
    return records


def log(message: str) -> None:
    print(f"[client {MODE}] {message}", file=sys.stderr, flush=True)


def emit(observations: dict) -> None:
    """Prints the observations: one JSON object on one line of stdout."""
    print(json.dumps(observations, sort_keys=True), flush=True)


def run(main: Any) -> None:
    """Runs `main()` and emits what it returns."""
    emit(asyncio.run(main()))


def server_pid() -> int:
    """The pid of the `codemode serve` process using CODEMODE_CONFIG (unique per test)."""
    config = os.environ["CODEMODE_CONFIG"]
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"codemode") and b"serve" in argv and config.encode() in argv:
            return int(entry)
    raise RuntimeError(f"no codemode serve process for {config}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # Fields after the command: state is [0]; utime and stime are fields 14 and 15 of stat(5).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
