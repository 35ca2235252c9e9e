"""Upstream progress and log messages reach the client of the eval whose calls they are about,
and nobody else (tests/mcp/notifications.rs). Two clients, A and B, of one codemode:
1. A's eval calls chatty's `count`: A's request gets chatty's progress, named, among its own;
2. A's eval calls chatty's `say` at four levels: A (level `warning`) hears two, B nothing;
3. while A's eval holds a call on chatty, B's eval makes chatty talk: two evals have calls
   there, so nobody hears it;
4. while A's eval holds a call on chatty, B gets chatty's prompt `noisy`, which logs: the
   message is about B's own request, so A does not hear it;
5. B (level `debug`) toggles server-everything's simulated logging on and off in one eval: B
   hears its one message;
6. A's eval runs everything's long-running operation: A gets its progress."""

import asyncio
import os
import warnings

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from harness import MODE, Ready, connect, evaluate, run, wait_until

warnings.simplefilter("ignore")

DIR = os.environ["CHATTY_DIR"]

COUNT = 'return await codemode.chatty__count({ steps: 3 });'
SAY = 'return await codemode.chatty__say({ levels: ["debug", "info", "warning", "error"] });'
HOLD = 'return await codemode.chatty__hold({ tag: "a" });'
TOGGLE = """
await codemode["everything__toggle-simulated-logging"]({});
await codemode["everything__toggle-simulated-logging"]({});
return "toggled";
"""
LONG = 'await codemode["everything__trigger-long-running-operation"]({ duration: 0.4, steps: 2 }); return "done";'


class Logs:
    """A logging callback that keeps what it hears."""

    def __init__(self) -> None:
        self.heard: list[list] = []

    async def __call__(self, params) -> None:
        self.heard.append([params.level, params.logger, params.data])


class Progress:
    """A progress callback that keeps every report."""

    def __init__(self) -> None:
        self.reports: list[list] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.reports.append([progress, total, message])

    def upstream(self) -> list[str]:
        """The upstreams' reports (codemode's own say `script running for …`)."""
        return [m for _, _, m in self.reports if m and m.startswith("[")]

    def increasing(self) -> bool:
        values = [p for p, _, _ in self.reports]
        return all(a < b for a, b in zip(values, values[1:]))


def client(token_var: str, **kwargs):
    """A client presenting the bearer token in `token_var` when the test gives one (on
    2026-07-28, which has no sessions, a client is known by its caller)."""
    token = os.environ.get(token_var)
    if not token:
        return connect(**kwargs)
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Ready(Client(streamable_http_client(os.environ["CODEMODE_URL"], http_client=http), mode=MODE, **kwargs))


async def main() -> dict:
    logs_a, logs_b = Logs(), Logs()
    # 2026-07-28: each request opts in with its level; older: the session sets it.
    modern = MODE == "auto"
    kwargs_a = {"log_level": "warning"} if modern else {}
    kwargs_b = {"log_level": "debug"} if modern else {}
    async with client("TOKEN_A", logging_callback=logs_a, **kwargs_a) as a, client(
        "TOKEN_B", logging_callback=logs_b, **kwargs_b
    ) as b:
        if not modern:
            await a.set_logging_level("warning")
            await b.set_logging_level("debug")
        counting = Progress()
        counted = await evaluate(a, COUNT, progress_callback=counting)
        said = await evaluate(a, SAY)
        heard_a_alone = list(logs_a.heard)

        held = asyncio.create_task(evaluate(a, HOLD))
        await wait_until(lambda: os.path.exists(os.path.join(DIR, "held-a")), "A's call on chatty")
        crowded = await evaluate(b, SAY)
        open(os.path.join(DIR, "release-a"), "w").close()
        held = await held
        heard_b_crowded = list(logs_b.heard)

        # A client's own prompts/get at chatty while A's eval holds a call there: what chatty
        # logs meanwhile is about B's request, so A must not hear it (nor B: no eval asked).
        heard_a_before = len(logs_a.heard)
        held_b = asyncio.create_task(evaluate(a, HOLD.replace('"a"', '"b"')))
        await wait_until(lambda: os.path.exists(os.path.join(DIR, "held-b")), "A's second call on chatty")
        prompt = await b.get_prompt("chatty__noisy")
        open(os.path.join(DIR, "release-b"), "w").close()
        await held_b
        heard_a_prompt = logs_a.heard[heard_a_before:]

        toggled = await evaluate(b, TOGGLE)
        heard_b_everything = logs_b.heard[len(heard_b_crowded):]

        long = Progress()
        done = await evaluate(a, LONG, progress_callback=long)
        protocol = a.protocol_version
    return {
        "protocol": protocol,
        "results": [r["structured"]["result"] for r in (counted, said, held, crowded, toggled, done)],
        "count_progress": counting.upstream(),
        "count_increasing": counting.increasing(),
        "heard_a_alone": heard_a_alone,
        "heard_a_after": logs_a.heard[len(heard_a_alone):],
        "heard_b_crowded": heard_b_crowded,
        "heard_b_everything": heard_b_everything,
        "heard_a_prompt": heard_a_prompt,
        "prompt": [m.content.text for m in prompt.messages],
        "long_progress": long.upstream(),
        "long_increasing": long.increasing(),
    }


run(main)
