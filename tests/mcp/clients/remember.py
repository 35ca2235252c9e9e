"""Approvals "from now on" through the MCP client's elicitation (tests/mcp/remember.rs): the
form offers the answer with its period where `rememberFor` is set; the rule it records lets the
next eval make the same call without asking, but not another call. With CODEMODE_PHASE=after
(the rule revoked), the same call is asked about again."""

from __future__ import annotations

import os
from typing import Any

from harness import Human, approve, connect, evaluate, run

ECHO = "return await codemode.everything__echo({message: %s});"


class FormHuman(Human):
    """A Human that also keeps the titles of the decisions each form offered."""

    def __init__(self, *answers: dict) -> None:
        super().__init__(*answers)
        self.offered: list[list[str]] = []

    async def __call__(self, ctx: Any, params: Any) -> Any:
        schema = getattr(params, "requested_schema", None) or {}
        if not isinstance(schema, dict):
            schema = schema.model_dump(by_alias=True, exclude_none=True)
        choices = schema.get("properties", {}).get("decision", {}).get("oneOf", [])
        self.offered.append([c.get("title") for c in choices])
        return await super().__call__(ctx, params)


def notes(result: dict) -> list:
    return [c.get("note") for c in (result["structured"] or {}).get("tool_calls", [])]


async def main() -> dict:
    if os.environ.get("CODEMODE_PHASE") == "after":
        human = FormHuman()
        async with connect(human) as client:
            again = await evaluate(client, ECHO % '"hi"', "codemode_eval_sup")
        return {"asked": len(human.asked), "again": [again["is_error"], notes(again)]}
    human = FormHuman(approve("approve_remember"))
    async with connect(human) as client:
        first = await evaluate(client, ECHO % '"hi"', "codemode_eval_sup")
        again = await evaluate(client, ECHO % '"hi"', "codemode_eval_sup")
        asked_before_other = len(human.asked)
        other = await evaluate(client, ECHO % '"bye"', "codemode_eval_sup")
        plain = await evaluate(client, ECHO % '"hi"', "codemode_eval_plain")
    return {
        "offered": human.offered,
        "asked_before_other": asked_before_other,
        "first": [first["is_error"], notes(first)],
        "again": [again["is_error"], notes(again)],
        "other": other["is_error"],
        "plain": plain["is_error"],
    }


run(main)
