"""An upstream's question asked while a script reads one of its resources reaches the human
of that script's eval (tests/mcp/upstream_elicitation.rs, upstream tests/mcp/asking_server.py
as `asking`): the read is sent as a call of the eval, so the question on its stream is routed."""

from harness import Human, connect, evaluate, run

READ = 'return await codemode.read_resource({ server: "asking", uri: "asking://question/R" });'


async def main() -> dict:
    human = Human(name="R")
    human.answers = [{"action": "accept", "content": {"answer": "from R"}}]
    async with connect(human) as client:
        read = await evaluate(client, READ)
    return {"read": read, "asked": [q["message"] for q in human.asked]}


run(main)
