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

With SCENARIO=reload (2025-11-25): the session subscribes to DOC and HIDDEN (both visible at
first); the config file is then replaced by CODEMODE_CONFIG_V2, whose profile hides DOC. Once
resources/list no longer shows it, the updates are turned on: only HIDDEN's are heard (two rounds
of server-everything's updates, so that DOC's of the first round would have come before).
"""

import asyncio
import os
import signal
import warnings

from mcp.types import ResourceUpdatedNotification

from harness import MODE, connect, error_of, evaluate, install_config, log, run, wait_until

warnings.simplefilter("ignore")

DOC = "codemode://everything/demo://resource/static/document/architecture.md"
HIDDEN = "codemode://everything/demo://resource/static/document/extension.md"
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


async def restart() -> dict:
    victim = DOC.replace("codemode://everything/", "codemode://victim/")
    updates: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            await updates.put(message.params.uri)

    async with connect(message_handler=on_message) as client:
        await client.subscribe_resource(victim)
        with open(os.path.join(os.environ["CODEMODE_DIR"], "victim.pid")) as f:
            os.kill(int(f.read().strip()), signal.SIGKILL)
        # The restarted server is subscribed again (the tap logs the second request).
        await wait_until(lambda: requests_of("resources/subscribe") == 2, "the subscription renewed")
        toggled = await evaluate(client, TOGGLE.replace("everything__", "victim__"))
        heard = await asyncio.wait_for(updates.get(), 60)
    return {"subscribes": requests_of("resources/subscribe"), "toggled": toggled["structured"]["ok"], "heard": heard}


async def respec() -> dict:
    victim = DOC.replace("codemode://everything/", "codemode://victim/")
    updates: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            await updates.put(message.params.uri)

    async with connect(message_handler=on_message) as client:
        await client.subscribe_resource(victim)
        with open(os.path.join(os.environ["CODEMODE_DIR"], "victim.pid")) as f:
            first = f.read().strip()
        install_config("CODEMODE_CONFIG_V2")

        def started_anew() -> bool:
            with open(os.path.join(os.environ["CODEMODE_DIR"], "victim.pid")) as f:
                return f.read().strip() != first

        await wait_until(started_anew, "the victim started with its new spec")
        # The new server is subscribed (the tap, logging both servers, shows a second request).
        await wait_until(lambda: requests_of("resources/subscribe") == 2, "the new server subscribed")
        toggled = await evaluate(client, TOGGLE.replace("everything__", "victim__"))
        heard = await asyncio.wait_for(updates.get(), 60)
    return {"subscribes": requests_of("resources/subscribe"), "toggled": toggled["structured"]["ok"], "heard": heard}


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
    if os.environ.get("SCENARIO") == "closed":
        return await closed()
    if os.environ.get("SCENARIO") == "abandoned":
        return await abandoned()
    return await (legacy() if MODE == "legacy" else modern())


run(main)
