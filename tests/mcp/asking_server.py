"""An upstream MCP server (the Python SDK's MCPServer) whose tools ask their client's human,
for tests/mcp/upstream_elicitation.rs. Over stdio with no arguments, over streamable HTTP on
127.0.0.1 with `PORT OUT` (OUT unused).

- `ask(who)` asks `Question for <who>` (one string field `answer`) during its call, on the
  call's own stream, and answers `<action>: <answer>`;
- `ask_later(who)` answers `later` at once; once a `hold` call is in flight, it asks
  `Late question for <who>` with no call to tie it to (over HTTP on the standalone stream) — as
  a server does when it asks after its call returned;
- reading `asking://question/<who>` asks `Question for <who>` as `ask` does, on the read's
  own stream, and reads `<action>: <answer>`;
- `hold()` lets that late question go, waits for its outcome and answers it
  (`<action>: <answer>`).
"""

import asyncio
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("asking")
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}

held = asyncio.Event()
late_outcome: asyncio.Future | None = None


def said(result) -> str:
    answer = (result.content or {}).get("answer", "")
    return f"{result.action}: {answer}"


@server.tool()
async def ask(who: str, ctx: Context) -> str:
    """Asks the client's human a question during the call."""
    result = await ctx.request_context.session.elicit_form(
        f"Question for {who}", SCHEMA, related_request_id=ctx.request_context.request_id
    )
    return said(result)


@server.resource("asking://question/{who}")
async def question(who: str, ctx: Context) -> str:
    """Asks the client's human a question while the resource is read."""
    result = await ctx.request_context.session.elicit_form(
        f"Question for {who}", SCHEMA, related_request_id=ctx.request_context.request_id
    )
    return said(result)


@server.tool()
async def ask_later(who: str, ctx: Context) -> str:
    """Asks a question after the call returned, once a `hold` call is in flight."""
    global late_outcome
    session = ctx.request_context.session
    late_outcome = asyncio.get_running_loop().create_future()

    async def later(outcome: asyncio.Future) -> None:
        await held.wait()
        try:
            result = await session.elicit_form(f"Late question for {who}", SCHEMA)
            outcome.set_result(said(result))
        except Exception as e:  # an error answer is an outcome too
            outcome.set_result(f"error: {e}")

    asyncio.get_running_loop().create_task(later(late_outcome))
    return "later"


@server.tool()
async def hold() -> str:
    """Lets the late question go and answers its outcome."""
    if late_outcome is None:
        return "nothing asked later"
    held.set()
    return await late_outcome


if len(sys.argv) > 1:
    import uvicorn

    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
else:
    server.run()
