"""Classification and `outputs.allow` through a real upstream (tests/mcp/classes.rs).

Environment (besides harness.py's): CODEMODE_TOKEN, when set, the bearer token presented to
CODEMODE_URL (an authenticated `codemode serve --http`); unset, the client is local (stdio or
unauthenticated HTTP). CODEMODE_FILES is server-filesystem's directory.

Runs one eval calling a destructive tool (write_file), a write one (create_directory), a read
one (list_allowed_directories), then one calling server-everything's structured and text tools and
drifting_server's unannotated `account` under `outputs` rules with `allow`; emits {fs, outputs}.
"""

from __future__ import annotations

import json
import os

from harness import MODE, Ready, connect, evaluate, run
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

FS = """
const dir = %s;
const out = {};
for (const [name, args] of [
    ["fs__write_file", {path: dir + "/written.txt", content: "x"}],
    ["fs__create_directory", {path: dir + "/made"}],
    ["fs__list_allowed_directories", {}],
]) {
    try { await codemode[name](args); out[name] = "ok"; }
    catch (e) { out[name] = String(e.message); }
}
return out;
"""

OUTPUTS = """
const weather = await codemode["everything__get-structured-content"]({location: "Chicago"});
const echo = await codemode.everything__echo({message: "secret words"});
const account = await codemode.drift__account({});
return {weather, echo, account};
"""


def client() -> object:
    token = os.environ.get("CODEMODE_TOKEN")
    if not token:
        return connect()
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Ready(Client(streamable_http_client(os.environ["CODEMODE_URL"], http_client=http), mode=MODE))


async def main() -> dict:
    async with client() as c:
        fs = await evaluate(c, FS % json.dumps(os.environ["CODEMODE_FILES"]))
        outputs = await evaluate(c, OUTPUTS)
    return {"fs": fs, "outputs": outputs}


run(main)
