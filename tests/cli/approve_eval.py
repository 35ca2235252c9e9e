"""Starts `codemode serve --config CONFIG --approvals-http ADDR` over stdio as an MCP client that
cannot elicit (Python SDK, protocol 2025-11-25), runs CODE with `codemode_eval_p`, and prints
the structured result as one JSON line. The ask waits on the HTTP approval API. The server is
kept (and its approval stream open) until this script's stdin ends: a test closes it once its
approvers are done, so no approver sees the stream end before it quits.

usage: approve_eval.py CODEMODE CONFIG ADDR CODE
"""
import asyncio
import json
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters

codemode, config, addr, code = sys.argv[1:5]


async def main() -> None:
    server = StdioServerParameters(command=codemode, args=["serve", "--config", config, "--approvals-http", addr])
    async with Client(server, mode="legacy") as client:
        result = await client.call_tool("codemode_eval_p", {"code": code})
        print(json.dumps(result.structured_content, sort_keys=True), flush=True)
        await asyncio.to_thread(sys.stdin.read)


asyncio.run(main())
