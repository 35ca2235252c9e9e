"""An authenticated client of `codemode serve --http` (tests/mcp/auth.rs).

Environment (besides harness.py's): CODEMODE_AUTH_URL, the server's /mcp URL (started by the
test with `server.auth`), and CODEMODE_TOKEN, the bearer token to present. Lists the tools and
runs one eval; emits {protocol, tools, eval}.
"""

from __future__ import annotations

import os

from harness import Client, MODE, evaluate, run, tool_names
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main() -> dict:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {os.environ['CODEMODE_TOKEN']}"})
    transport = streamable_http_client(os.environ["CODEMODE_AUTH_URL"], http_client=http)
    async with Client(transport, mode=MODE) as client:
        protocol = client.protocol_version
        names = await tool_names(client)
        result = await evaluate(client, "return 6 * 7")
    return {"protocol": protocol, "tools": names, "eval": result}


run(main)
