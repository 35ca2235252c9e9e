"""An upstream that needs an OAuth login, through `codemode serve` (tests/mcp/oauth.rs):
- before anyone logs in, the eval tool's description and `search_tools` say
  `guarded (needs login: codemode auth login guarded)`, and a script's call to it fails at
  once with that text;
- someone runs `codemode auth login guarded` (another process, as an operator would);
- codemode notices the login by itself (no restart): clients are told the tool list changed,
  the description shows the server's tool, and the call is answered.

Extra environment: CODEMODE_LOGIN_BROWSER, the `--browser` command of the login.
"""

import asyncio
import os
import re
import subprocess

from mcp.types import ToolListChangedNotification

from harness import connect, evaluate, run, wait_event

CALL = "return await codemode.guarded__whoami({});"


def description(tools) -> str:
    return next(t.description for t in tools if t.name == "eval")


def servers(description: str) -> str:
    """What the eval tool's description says of the servers (`Servers: … .`)."""
    match = re.search(r"Servers: (.*?)\. ", description)
    return match.group(1) if match else description


async def main() -> dict:
    changed = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, ToolListChangedNotification):
            changed.set()

    async with connect(message_handler=on_message) as client:
        before = description((await client.list_tools(cache_mode="bypass")).tools)
        searched = await client.call_tool("search_tools", {"query": "whoami"})
        refused = await evaluate(client, CALL)
        changed.clear()
        login = subprocess.run(
            [
                os.environ["CODEMODE_BIN"],
                "auth",
                "login",
                "guarded",
                "--config",
                os.environ["CODEMODE_CONFIG"],
                "--browser",
                os.environ["CODEMODE_LOGIN_BROWSER"],
            ],
            capture_output=True,
            text=True,
        )
        await wait_event(changed, "tools/list_changed after the login")
        after = description((await client.list_tools(cache_mode="bypass")).tools)
        answered = await evaluate(client, CALL)
    return {
        "before": servers(before),
        "searched": searched.structured_content,
        "refused": {
            "is_error": refused["is_error"],
            "message": (refused["structured"] or {}).get("error", {}).get("message"),
        },
        "login": {"code": login.returncode, "stdout": login.stdout.split("  ")[:2], "stderr": login.stderr},
        "after": servers(after),
        "answered": {"is_error": answered["is_error"], "result": (answered["structured"] or {}).get("result")},
    }


run(main)
