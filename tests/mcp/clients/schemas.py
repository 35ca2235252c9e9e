"""Arguments checked against the tool's schema before the call, through the eval tool of an
`ask` profile (`gate`: fs__* asked): the invalid write_file is refused without asking the human
and never reaches server-filesystem (behind the tap: its requests are logged); the valid one is
asked, approved and written. Then the output policy's masks and an outputSchema warning."""

from harness import Human, approve, connect, evaluate, run

INVALID = """
return await codemode.fs__write_file({ path: PATH, content: 42 })
  .then(() => "written", (e) => ({ name: e.name, message: e.message, data: e.data }));
"""

VALID = 'return await codemode.fs__write_file({ path: PATH, content: "ok" });'

OUTPUTS = """
const account = await codemode.drift__account({});
const weather = await codemode.drift__weather({});
return { account, weather };
"""


async def main() -> dict:
    import json
    import os

    path = json.dumps(os.path.join(os.environ["CODEMODE_DIR"], "files", "out.txt"))
    human = Human(approve())
    out: dict = {}
    async with connect(human) as client:
        out["invalid"] = await evaluate(client, INVALID.replace("PATH", path), "codemode_eval_gate")
        out["asked_after_invalid"] = len(human.asked)
        out["written_after_invalid"] = os.path.exists(json.loads(path))
        out["valid"] = await evaluate(client, VALID.replace("PATH", path), "codemode_eval_gate")
        out["asked_after_valid"] = len(human.asked)
        with open(json.loads(path)) as f:
            out["file"] = f.read()
        out["outputs"] = await evaluate(client, OUTPUTS)
    return out


run(main)
