"""The core scenario, once per transport and mode: listing, a two-server Promise.all, a failing
eval, search_tools/get_tools, a denied call, asked calls accepted / declined / timed out, and
hitl_request with a confirmation step. Profile `sup` (see main.rs): everything__get-sum denied,
everything__echo asked, approvals time out after 2 s.

The timed-out approval is answered (approve) only after the server has decided it, so the
`elicitation_timeout` in its result can only come from the server's timeout. `timed_out_events`
records the order of that answer and of the eval's result."""

import asyncio

from harness import (
    MODE,
    Human,
    accept,
    approve,
    audit_records,
    call,
    connect,
    decline,
    evaluate,
    run,
    tool_names,
    wait_event,
    wait_until,
)

PARALLEL = """
const [now, echo] = await Promise.all([
  codemode.time__get_current_time({ timezone: "UTC" }),
  codemode.everything__echo({ message: "hi" }),
]);
return { timezone: now.timezone, echo };
"""

DENIED = """
try {
  await codemode["everything__get-sum"]({ a: 1, b: 2 });
  return "not denied";
} catch (e) {
  return { name: e.name, toolName: e.toolName, reason: e.reason, isDenied: e instanceof ToolCallDeniedError };
}
"""

# Asked: resolves to the echo, or to the error the script caught.
ASKED = """
try {
  return await codemode.everything__echo({ message: "MSG" });
} catch (e) {
  return { name: e.name, reason: e.reason };
}
"""

HITL = """
return await codemode.hitl_request({
  question: "Pick a colour", options: ["red", "blue"], requireConfirmation: true,
});
"""

SEARCH_IN_SCRIPT = """
const found = await codemode.search_tools({ query: "current time timezone" });
const decl = await codemode.get_tools({ names: ["time__get_current_time"] });
return { first: found.results[0].name, declares: decl.declarations.includes("time__get_current_time") };
"""


async def main() -> dict:
    events: list[str] = []
    timed_out_returned = asyncio.Event()

    async def after_the_timeout() -> None:
        if MODE == "legacy":
            # The result comes while the question is still open: the server did not wait.
            await wait_event(timed_out_returned, "the timed-out eval's result")
        else:
            # 2026-07-28: the result only comes with the retry that carries this answer, so
            # wait for the server's decision itself (its audit record).
            await wait_until(
                lambda: any(r.get("reason") == "elicitation_timeout" for r in audit_records()),
                "the approval's timeout in the audit log",
            )
        events.append("answered")

    human = Human(
        approve("approve_once"),  # accepted
        decline(),  # declined
        approve("approve_once", after=after_the_timeout),  # answered after the 2 s timeout
        accept({"answer": "blue"}),  # hitl_request: the choice
        accept({"confirm": "confirm"}),  # hitl_request: the confirmation
    )
    out: dict = {}
    async with connect(human) as client:
        out["protocol"] = client.protocol_version
        out["tools"] = sorted(await tool_names(client))
        listing = await client.list_tools(cache_mode="bypass")
        out["eval_description"] = next(t.description for t in listing.tools if t.name == "eval")
        out["parallel"] = await evaluate(client, PARALLEL)
        out["failing"] = await evaluate(client, 'const x = 1;\nthrow new Error("boom");')
        out["search"] = await call(client, "search_tools", {"query": "echo message back"})
        out["get"] = await call(client, "get_tools", {"names": ["everything__echo", "nope__nothing"]})
        out["search_in_script"] = await evaluate(client, SEARCH_IN_SCRIPT)
        out["denied"] = await evaluate(client, DENIED, "codemode_eval_sup")
        out["accepted"] = await evaluate(client, ASKED.replace("MSG", "accepted"), "codemode_eval_sup")
        out["declined"] = await evaluate(client, ASKED.replace("MSG", "declined"), "codemode_eval_sup")
        out["timed_out"] = await evaluate(client, ASKED.replace("MSG", "timed out"), "codemode_eval_sup")
        events.append("result")
        timed_out_returned.set()
        out["hitl"] = await evaluate(client, HITL)
    out["asked"] = human.asked
    out["timed_out_events"] = events
    return out


run(main)
