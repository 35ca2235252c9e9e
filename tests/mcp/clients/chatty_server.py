"""An upstream MCP server (the Python SDK, stdio) that talks while its tools run, for
tests/mcp/notifications.rs and tests/mcp/sampling.rs:
- `say(levels)` sends one log message per level (logger `chat`, data `<level> message`);
- `count(steps)` reports progress 1..steps of `steps` (message `step <i>`);
- the prompt `noisy` logs a warning `prompt message` when it is got;
- `sample(text, stubborn)` asks its client's model (`sampling/createMessage`) with a text
  message, an image, a system prompt, model preferences and limits, and answers `<model>: <its
  text>`; a refusal becomes its error (it asks without looking at the client's capabilities).
  With `stubborn` it does not withdraw its request when its own call is cancelled;
- `declared()` answers whether its client declared the `sampling` capability;
- `hold(tag)` writes `$CHATTY_DIR/held-<tag>`, then answers `tag` once the test creates
  `$CHATTY_DIR/release-<tag>` (so a test knows by a file, not a clock, that the call is in
  flight, and ends it when it wants).
"""

import asyncio
import os
import warnings

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ImageContent, ModelHint, ModelPreferences, SamplingMessage, TextContent

# MCP logging and sampling are deprecated from protocol 2026-07-28 on; this server speaks
# 2025-11-25 to codemode.
warnings.simplefilter("ignore")

DIR = os.environ["CHATTY_DIR"]
server = MCPServer("chatty")


@server.tool()
async def say(levels: list[str], ctx: Context) -> str:
    """Sends a log message at each of `levels`."""
    for level in levels:
        await ctx.log(level, f"{level} message", logger_name="chat")
    return f"said {len(levels)}"


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Reports progress 1..steps."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
    return f"counted {steps}"


# A 1x1 PNG, 68 bytes.
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR4nGNgYAAAAAMAASsJTYQAAAAASUVORK5CYII="


@server.tool()
async def sample(text: str, ctx: Context, stubborn: bool = False) -> str:
    """Asks the client's model to answer `text`."""
    with anyio.CancelScope(shield=stubborn):
        result = await ask_model(text, ctx)
    return f"{result.model}: {result.content.text}"


async def ask_model(text: str, ctx: Context):
    return await ctx.session.create_message(
        [
            SamplingMessage(role="user", content=TextContent(type="text", text=text)),
            SamplingMessage(role="user", content=ImageContent(type="image", data=PIXEL, mime_type="image/png")),
        ],
        max_tokens=32,
        system_prompt="Answer in one word.",
        temperature=0.25,
        model_preferences=ModelPreferences(hints=[ModelHint(name="claude")], speed_priority=0.75),
    )


@server.tool()
async def declared(ctx: Context) -> bool:
    """Whether the client declared `sampling`."""
    capabilities = ctx.client_capabilities
    return capabilities is not None and capabilities.sampling is not None


@server.tool()
async def hold(tag: str) -> str:
    """Answers once the test releases it."""
    with open(os.path.join(DIR, "held-" + tag), "w"):
        pass
    release = os.path.join(DIR, "release-" + tag)
    while not os.path.exists(release):
        await asyncio.sleep(0.02)
    return tag


@server.prompt()
async def noisy(ctx: Context) -> str:
    """A prompt whose getting logs a warning (logger `chat`, data `prompt message`)."""
    await ctx.log("warning", "prompt message", logger_name="chat")
    return "hello"


if __name__ == "__main__":
    server.run()
