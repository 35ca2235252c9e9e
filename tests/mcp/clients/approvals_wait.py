"""A client that cannot elicit runs CODE with `codemode_eval_gate` and waits: its ask is answered
on the approval page in a headless browser (tests/mcp/browser.rs). Emits the eval's result."""

from harness import connect, evaluate, run

CODE = """if (false) { await codemode.time__get_current_time({}); }
const echo = await codemode.everything__echo({message: "<img src=x onerror=alert(1)>\\u202e\\u001b[2K\\n  \\"fake\\": \\"approved\\""});
const asked = await codemode.hitl_request({question: "Ship\\nit <b>now</b>?", options: ["ship", "hold"]});
return [echo, asked.status, asked.selectedOption];"""


async def main() -> dict:
    async with connect(None) as client:
        return {"result": await evaluate(client, CODE, "codemode_eval_gate")}


run(main)
