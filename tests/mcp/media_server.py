"""An MCP server (the Python SDK's MCPServer) serving media of any size: the upstream `media`
of tests/mcp/media.rs over stdio, and with `--http PORT` over streamable HTTP on 127.0.0.1
(upstream/tests/upstream/calls.rs)."""

import base64
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import BlobResourceContents, EmbeddedResource, ImageContent, TextContent

server = MCPServer("media")


@server.tool()
def image(size: int) -> list[TextContent | ImageContent]:
    """A caption and an image of `size` bytes (each 0x89) typed image/png."""
    data = base64.b64encode(b"\x89" * size).decode()
    return [
        TextContent(type="text", text=f"{size} bytes"),
        ImageContent(type="image", data=data, mimeType="image/png"),
    ]


@server.tool()
def secret_image() -> list[TextContent | ImageContent]:
    """A caption and a 4-byte image the config's output policy masks."""
    return image(4)


@server.tool()
def blob() -> EmbeddedResource:
    """An embedded binary resource of 3 bytes."""
    return EmbeddedResource(
        type="resource",
        resource=BlobResourceContents(uri="file:///data.bin", mimeType="application/octet-stream", blob="AQID"),
    )


if sys.argv[1:2] == ["--http"]:
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
else:
    server.run()
