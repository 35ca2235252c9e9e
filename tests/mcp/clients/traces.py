"""One eval with a traceparent in its request's `_meta`: two calls to the HTTP upstream `web`,
the first asked (approved through elicitation). Then one eval from a client whose HTTP requests
carry the W3C `traceparent` header (HEADER_TRACEPARENT) as well as the first one in `_meta`: the
header is the one codemode must follow. Observes the results and what was asked.
"""

import os

from harness import MODE, Client, Human, approve, connect, evaluate, run
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

CODE = """const said = await codemode.web__echo({message: "secret argument"});
const sum = await codemode.web__add({a: 2, b: 3});
return [said, sum];"""


async def main() -> dict:
    human = Human(approve("approve_once"))
    async with connect(human) as client:
        meta = {"traceparent": os.environ["TRACEPARENT"]}
        result = await evaluate(client, CODE, "codemode_eval_gate", meta=meta)
    http = create_mcp_http_client(headers={"traceparent": os.environ["HEADER_TRACEPARENT"]})
    transport = streamable_http_client(os.environ["CODEMODE_URL"], http_client=http)
    async with Client(transport, mode=MODE) as client:
        headed = await evaluate(client, "return 1", "codemode_eval_gate", meta=meta)
    structured = result["structured"]
    return {"result": {k: structured[k] for k in ("ok", "result")}, "is_error": result["is_error"],
            "asked": len(human.asked), "headed": headed["structured"]["result"]}


run(main)
