"""A client that cannot elicit runs CODE with `codemode_eval_gate`: its first ask is answered
"from now on" on the approval page in a headless browser (tests/mcp/browser.rs), the identical
call after it is not asked about, the call with other arguments is (and declined there). Emits
the eval's result, the notes of its calls, and the audit's tool-call and rule records."""

from harness import audit_records, connect, evaluate, run, wait_until

CODE = """const same = {message: "same"};
const first = await codemode.everything__echo(same);
const again = await codemode.everything__echo(same);
let other;
try { other = await codemode.everything__echo({message: "other"}); } catch (e) { other = e.reason; }
return [first, again, other];"""


def records() -> list[list]:
    return [
        [r.get("event"), r.get("decision") or r.get("action"), r.get("channel")]
        for r in audit_records()
        if r.get("event") in ("tool_call", "rule")
    ]


async def main() -> dict:
    async with connect(None) as client:
        result = await evaluate(client, CODE, "codemode_eval_gate")
    # The writer thread may write the records after the eval's response.
    await wait_until(lambda: len(records()) == 4, "the audit's four records")
    notes = [c.get("note") for c in (result["structured"] or {}).get("tool_calls", [])]
    return {"result": result["structured"]["result"], "notes": notes, "audit": records()}


run(main)
