"""Resource subscriptions through codemode (tests/mcp/subscriptions.rs), on the session's
protocol: `resources/subscribe` (2025-11-25) or a `subscriptions/listen` stream's
`resourceSubscriptions` (2026-07-28). The client subscribes to a server-everything resource by
its mapped URI, and to one the default profile hides; a script then turns on server-everything's
updates (its tool `toggle-subscriber-updates`, which sends one at once), and the client hears
`notifications/resources/updated` naming the mapped URI. Emits what it heard and was refused.

With SCENARIO=restart (2025-11-25): the upstream `victim` (server-everything behind
tests/support/tap.py) is killed after the subscription; codemode restarts it and subscribes the
new session again, and the updates of the restarted server are heard.

With SCENARIO=respec (2025-11-25): after the subscription to a `victim` resource, the config file
is replaced by CODEMODE_CONFIG_V2, where `victim` keeps its name but not its spec (an env var
more): codemode starts it anew, subscribes the new server to what its clients still watch, and
the updates of the new server are heard.

With SCENARIO=abandoned (2025-11-25): a session subscribes to a `victim` resource and closes
without unsubscribing; a second session subscribes to it and lets it go. Nobody is left, so the
upstream (whose tap logs its requests) must have been unsubscribed as often as subscribed.

With SCENARIO=closed (2025-11-25): a session subscribes to a `victim` resource and closes
without unsubscribing; nobody else does anything, and the upstream must be unsubscribed.

With SCENARIO=closed_mid_eval (2025-11-25): a session subscribes to a `victim` resource, starts
an eval whose call to the victim runs for minutes, and is closed (a DELETE of its own, so that no
cancellation of the call is sent first) while the call runs; the upstream must be unsubscribed
without waiting for the eval to end (rmcp cancels the session's requests when it closes).

With SCENARIO=reload (2025-11-25): the session subscribes to DOC and HIDDEN (both visible at
first); the config file is then replaced by CODEMODE_CONFIG_V2, whose profile hides DOC. Once
resources/list no longer shows it, the updates are turned on: only HIDDEN's are heard (two rounds
of server-everything's updates, so that DOC's of the first round would have come before).
"""

import asyncio
import os
import signal
import warnings

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import ResourceUpdatedNotification

from harness import MODE, Ready, connect, error_of, evaluate, install_config, log, run, wait_until

warnings.simplefilter("ignore")

DOC = "codemode://everything/demo://resource/static/document/architecture.md"
HIDDEN = "codemode://everything/demo://resource/static/document/extension.md"
# Runs for 10 minutes: past the test's eval timeout and the victim's call timeout (300 s).
LONG_ON_VICTIM = 'return await codemode["victim__trigger-long-running-operation"]({ duration: 600, steps: 600 });'
TOGGLE = 'return await codemode["everything__toggle-subscriber-updates"]({});'


async def legacy() -> dict:
    updates: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            await updates.put(message.params.uri)

    async with connect(message_handler=on_message) as client:
        obs = {
            "subscribed": await error_of(client.subscribe_resource(DOC)),
            "hidden": await error_of(client.subscribe_resource(HIDDEN)),
            "not_mapped": await error_of(client.subscribe_resource("demo://resource/static/document/architecture.md")),
        }
        toggled = await evaluate(client, TOGGLE)
        obs["toggled"] = toggled["structured"]["ok"]
        obs["heard"] = await asyncio.wait_for(updates.get(), 60)
        # One session watches at most 256 resources: DOC and 255 more, then a refusal until
        # one is let go.
        more = [f"codemode://everything/demo://cap/{i}" for i in range(256)]
        obs["more_refused"] = [
            i for i, uri in enumerate(more) if await error_of(client.subscribe_resource(uri)) != "no error"
        ]
        obs["past_the_cap"] = await error_of(client.subscribe_resource(more[-1]))
        await client.unsubscribe_resource(DOC)
        obs["after_letting_go"] = await error_of(client.subscribe_resource(more[-1]))
        # A URI longer than codemode holds (8 KiB) is refused before anything is watched.
        obs["too_long"] = await error_of(client.subscribe_resource("codemode://everything/demo://" + "x" * 9000))
    return obs


async def modern() -> dict:
    async with connect() as client:
        async with client.listen(resource_subscriptions=[DOC, HIDDEN]) as sub:
            toggled = await evaluate(client, TOGGLE)
            # server-everything sends an update for every subscribed URI at once, then again
            # every 5 s: had the hidden one been subscribed upstream, it would come second.
            heard = []
            for _ in range(2):
                event = await asyncio.wait_for(sub.__anext__(), 60)
                log(f"heard {event!r}")
                heard.append(event.uri)
            return {"toggled": toggled["structured"]["ok"], "heard": heard}


def requests_of(method: str) -> int:
    """How many `method` requests the victim's tap forwarded."""
    try:
        with open(os.path.join(os.environ["CODEMODE_DIR"], "victim.requests")) as f:
            return sum(f'"method": "{method}"' in line or f'"method":"{method}"' in line for line in f)
    except FileNotFoundError:
        return 0


def victim_pid() -> str:
    """The pid of the victim's server now (its tap writes it at each start)."""
    with open(os.path.join(os.environ["CODEMODE_DIR"], "victim.pid")) as f:
        return f.read().strip()


async def renewed(end_first, what: str) -> dict:
    """Subscribes to a `victim` resource, lets `end_first()` end the victim's first server, waits
    until the next one is subscribed (the tap, logging both servers, shows a second request), and
    hears the update the next one sends."""
    victim = DOC.replace("codemode://everything/", "codemode://victim/")
    updates: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            await updates.put(message.params.uri)

    async with connect(message_handler=on_message) as client:
        await client.subscribe_resource(victim)
        await end_first()
        await wait_until(lambda: requests_of("resources/subscribe") == 2, what)
        toggled = await evaluate(client, TOGGLE.replace("everything__", "victim__"))
        heard = await asyncio.wait_for(updates.get(), 60)
    return {"subscribes": requests_of("resources/subscribe"), "toggled": toggled["structured"]["ok"], "heard": heard}


async def restart() -> dict:
    async def kill() -> None:
        os.kill(int(victim_pid()), signal.SIGKILL)

    return await renewed(kill, "the subscription renewed")


async def respec() -> dict:
    async def replace_config() -> None:
        first = victim_pid()
        install_config("CODEMODE_CONFIG_V2")
        await wait_until(lambda: victim_pid() != first, "the victim started with its new spec")

    return await renewed(replace_config, "the new server subscribed")


async def abandoned() -> dict:
    victim = DOC.replace("codemode://everything/", "codemode://victim/")
    async with connect() as client:
        await client.subscribe_resource(victim)
    async with connect() as client:
        await client.subscribe_resource(victim)
        await client.unsubscribe_resource(victim)
    await wait_until(
        lambda: requests_of("resources/unsubscribe") == requests_of("resources/subscribe"),
        "the upstream unsubscribed once nobody was left",
    )
    return {"subscribes": requests_of("resources/subscribe"), "unsubscribes": requests_of("resources/unsubscribe")}


async def closed() -> dict:
    victim = DOC.replace("codemode://everything/", "codemode://victim/")
    async with connect() as client:
        await client.subscribe_resource(victim)
    await wait_until(
        lambda: requests_of("resources/unsubscribe") == 1,
        "the closed session's subscription ended upstream",
    )
    return {"subscribes": requests_of("resources/subscribe"), "unsubscribes": requests_of("resources/unsubscribe")}


async def closed_mid_eval() -> dict:
    victim = DOC.replace("codemode://everything/", "codemode://victim/")
    sessions: list[str] = []

    async def session_of(response: httpx2.Response) -> None:
        if "mcp-session-id" in response.headers:
            sessions.append(response.headers["mcp-session-id"])

    url = os.environ["CODEMODE_URL"]
    http = create_mcp_http_client()
    http.event_hooks["response"].append(session_of)
    transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
    async with http, Ready(Client(transport, mode=MODE)) as client:
        await client.subscribe_resource(victim)
        running = asyncio.create_task(evaluate(client, LONG_ON_VICTIM))
        await wait_until(lambda: requests_of("tools/call") == 1, "the eval's call reached the victim")
        async with httpx2.AsyncClient() as other:
            closed = await other.delete(
                url, headers={"mcp-session-id": sessions[-1], "mcp-protocol-version": "2025-11-25"}
            )
        await wait_until(
            lambda: requests_of("resources/unsubscribe") == 1,
            "the closed session's subscription ended upstream while its eval ran",
        )
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    return {
        "closed": closed.status_code,
        "subscribes": requests_of("resources/subscribe"),
        "unsubscribes": requests_of("resources/unsubscribe"),
        "calls": requests_of("tools/call"),
    }


async def reloaded() -> dict:
    heard: list[str] = []
    seconds: asyncio.Event = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            heard.append(str(message.params.uri))
            if heard.count(HIDDEN) == 2:
                seconds.set()

    async with connect(message_handler=on_message) as client:
        await client.subscribe_resource(DOC)
        await client.subscribe_resource(HIDDEN)
        install_config("CODEMODE_CONFIG_V2")
        listed: list[str] = [DOC]

        async def refresh() -> None:
            listed[:] = [str(r.uri) for r in (await client.list_resources()).resources]

        started = asyncio.get_running_loop().time()
        while DOC in listed:
            await refresh()
            if asyncio.get_running_loop().time() - started > 60:
                raise TimeoutError("the reloaded profile never hid DOC")
            await asyncio.sleep(0.05)
        await evaluate(client, TOGGLE)
        await asyncio.wait_for(seconds.wait(), 60)
    return {"heard": heard}


async def main() -> dict:
    if os.environ.get("SCENARIO") == "restart":
        return await restart()
    if os.environ.get("SCENARIO") == "respec":
        return await respec()
    if os.environ.get("SCENARIO") == "reload":
        return await reloaded()
    if os.environ.get("SCENARIO") == "closed_mid_eval":
        return await closed_mid_eval()
    if os.environ.get("SCENARIO") == "closed":
        return await closed()
    if os.environ.get("SCENARIO") == "abandoned":
        return await abandoned()
    return await (legacy() if MODE == "legacy" else modern())


run(main)
