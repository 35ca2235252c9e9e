"""The client side of the conformance suite's `elicitation-sep1034-client-defaults`
(tests/mcp/conformance/client.rs): the suite runs this script with its test server's URL as the
last argument. It writes CODEMODE_CONFIG with that server as the upstream `conformance`, starts
`codemode serve` over stdio, and runs an eval calling the server's tool, whose form the human
accepts with `{}`: codemode must complete the form's defaults before the answer goes upstream."""

import json
import os
import sys

from harness import Human, accept, connect, evaluate, run

CALL = 'return await codemode.conformance__test_client_elicitation_defaults({});'


def write_config(url: str) -> None:
    with open(os.environ["CODEMODE_CONFIG"], "w") as f:
        json.dump({"mcpServers": {"conformance": {"url": url}}}, f)


async def main() -> dict:
    write_config(sys.argv[-1])
    human = Human(accept({}))
    async with connect(human) as client:
        result = await evaluate(client, CALL)
    return {"result": result["structured"]["result"], "asked": human.asked}


run(main)
