"""Two clients of one HTTP server, each with its own human, run asked calls at the same time:
each question must go to the client whose script asked it. A approves `everything__echo` for
its session, B declines; then each runs a second asked call (B is asked again and approves)."""

import asyncio

from harness import Human, approve, connect, decline, evaluate, run


def echo(message: str) -> str:
    return f"""
try {{
  return await codemode.everything__echo({{ message: {message!r} }});
}} catch (e) {{
  return {{ name: e.name, reason: e.reason }};
}}
"""


async def main() -> dict:
    # The delays keep both questions pending at once.
    human_a = Human(approve("approve_tool_for_session", delay=0.5), approve("approve_once"), name="A")
    human_b = Human(decline(delay=0.5), approve("approve_once"), name="B")
    async with connect(human_a) as a, connect(human_b) as b:
        first_a, first_b = await asyncio.gather(
            evaluate(a, echo("from A"), "codemode_eval_sup"),
            evaluate(b, echo("from B"), "codemode_eval_sup"),
        )
        second_a = await evaluate(a, echo("A again"), "codemode_eval_sup")
        second_b = await evaluate(b, echo("B again"), "codemode_eval_sup")
        protocol = a.protocol_version
    return {
        "protocol": protocol,
        "first_a": first_a,
        "first_b": first_b,
        "second_a": second_a,
        "second_b": second_b,
        "asked_a": [q["message"] for q in human_a.asked],
        "asked_b": [q["message"] for q in human_b.asked],
    }


run(main)
