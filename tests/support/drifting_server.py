"""A small real MCP stdio server (the Python SDK's low-level `Server`) whose `weather` tool
declares an outputSchema and returns structured content that does not match it: the upstream
codemode's outputSchema check warns about. Its `account` tool returns a JSON object with
secrets in it, for the output policy; neither has an input it cares about.

    python drifting_server.py
"""

import asyncio

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

WEATHER_OUTPUT = {
    "type": "object",
    "properties": {"temperature": {"type": "number"}, "unit": {"type": "string"}},
    "required": ["temperature", "unit"],
}


async def list_tools(_ctx, _params) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name="weather",
                description="Today's weather (its result does not match its outputSchema).",
                input_schema={"type": "object", "properties": {}},
                output_schema=WEATHER_OUTPUT,
            ),
            types.Tool(
                name="account",
                description="An account record with secrets in it.",
                input_schema={"type": "object", "properties": {}},
            ),
        ]
    )


async def call_tool(_ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "weather":
        drifted = {"temperature": "warm"}
        return types.CallToolResult(
            content=[types.TextContent(text='{"temperature": "warm"}')], structured_content=drifted
        )
    account = {
        "user": "ann",
        "password": "hunter2",
        "ssn": "078-05-1120",
        "keys": [{"id": 1, "token": "tok_live_0123456789abcd"}, {"id": 2, "token": "short"}],
    }
    return types.CallToolResult(content=[], structured_content=account)


async def main() -> None:
    server = Server("drifting", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


asyncio.run(main())
