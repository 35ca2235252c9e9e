"""An upstream MCP server (the Python SDK, stdio) whose calls take as long as the test wants.

Every call first writes a marker under $FAULTS_DIR, so that a test knows, by a counter and not
by a clock, that the call is in flight:
- `sleep(seconds, tag)` appends `tag` to `started`, sleeps, and returns `tag`;
- `hang(tag)` writes its process id to `hang-<tag>` and never answers.
"""

import asyncio
import os

from mcp.server.mcpserver import MCPServer

DIR = os.environ["FAULTS_DIR"]
server = MCPServer("slow")


@server.tool()
async def sleep(seconds: float, tag: str) -> str:
    """Sleeps `seconds`, then returns `tag`."""
    with open(os.path.join(DIR, "started"), "a") as f:
        f.write(tag + "\n")
    await asyncio.sleep(seconds)
    return tag


@server.tool()
async def hang(tag: str) -> str:
    """Never answers."""
    path = os.path.join(DIR, "hang-" + tag)
    with open(path + ".writing", "w") as f:
        f.write(str(os.getpid()))
    os.rename(path + ".writing", path)
    await asyncio.Event().wait()
    return "unreachable"


if __name__ == "__main__":
    server.run()
