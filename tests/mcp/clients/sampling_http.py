"""An upstream's sampling request asked on the HTTP approval API (tests/mcp/sampling.rs): the
eval's client has a model but cannot elicit, so the question waits there; a second HTTP client
answers it — `approve` once (the model answers), then `decline` (the model is not asked)."""

import asyncio
import os

import httpx2 as httpx  # the HTTP client the Python SDK itself uses

from approvals_http import next_event
from harness import connect, evaluate, run
from sampling import EVERYTHING, Model

BASE = os.environ["CODEMODE_URL"].rsplit("/mcp", 1)[0]


async def asked_and_answered(http, lines, client, answer: dict) -> tuple[dict, dict]:
    """Starts an eval, answers its question with `answer`; returns the question and the eval."""
    task = asyncio.create_task(evaluate(client, EVERYTHING, tool="codemode_eval_guarded"))
    _, question = await next_event(lines)
    posted = await http.post(f"/approvals/{question['id']}", json=answer, headers={"Origin": BASE})
    seen = {k: question.get(k) for k in ("kind", "caller", "options", "args")}
    seen["posted"] = posted.status_code
    return seen, await task


async def main() -> dict:
    model = Model("a")
    async with httpx.AsyncClient(base_url=BASE, timeout=60) as http, connect(None, sampling_callback=model) as client:
        async with http.stream("GET", "/approvals/stream") as stream:
            lines = stream.aiter_lines()
            approved_question, approved = await asked_and_answered(
                http, lines, client, {"decision": "answer", "answer": "approve"}
            )
            # The `decided` event of the first question.
            await next_event(lines)
            declined_question, declined = await asked_and_answered(http, lines, client, {"decision": "decline"})
    return {
        "approved_question": approved_question,
        "approved": approved,
        "declined_question": declined_question,
        "declined": declined,
        "model": len(model.asked),
    }


if __name__ == "__main__":
    run(main)
