"""An MCP server (the Python SDK's MCPServer) over streamable HTTP on 127.0.0.1 that appends the
`traceparent` header of every HTTP request carrying one to HEADERS, one per line
(tests/mcp/traces.rs).

    python traced_server.py PORT HEADERS
"""

import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

PORT = int(sys.argv[1])
HEADERS = sys.argv[2]

server = MCPServer("traced")


@server.tool()
def echo(message: str) -> str:
    """Says `message` back."""
    return message


@server.tool()
def add(a: int, b: int) -> int:
    """`a + b`."""
    return a + b


app = server.streamable_http_app()


async def recording(scope, receive, send):
    if scope["type"] == "http":
        traceparent = dict(scope["headers"]).get(b"traceparent")
        if traceparent is not None:
            with open(HEADERS, "a") as f:
                f.write(traceparent.decode() + "\n")
    await app(scope, receive, send)


uvicorn.run(recording, host="127.0.0.1", port=PORT, log_level="warning")
