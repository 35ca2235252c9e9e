"""An approval prompt that shows a write as a diff (tests/mcp/prompt.rs): the profile's
`approvalDiffs` has the filesystem server's current content read before the human is asked.
Emits what the human was asked, and the files afterwards."""

from __future__ import annotations

import os

from harness import Human, approve, connect, evaluate, run

FILES = os.path.join(os.environ["CODEMODE_DIR"], "files")

WRITE = """
await codemode.fs__write_file({path: "%s/notes.txt", content: "one\\nTWO\\nthree\\n"});
await codemode.fs__write_file({path: "%s/new.txt", content: "fresh\\n"});
return "written";
""" % (FILES, FILES)


async def main() -> dict:
    human = Human(approve(), approve())
    async with connect(human) as client:
        result = await evaluate(client, WRITE, "codemode_eval_writer")
    with open(os.path.join(FILES, "notes.txt")) as f:
        notes = f.read()
    return {
        "asked": [q["message"] for q in human.asked],
        "result": [result["is_error"], result["structured"]["result"]],
        "notes": notes,
    }


run(main)
