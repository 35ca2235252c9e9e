"""A measurement, not a test (issue 17, fair sharing). Run against `codemode serve --http` with a
config that has an `everything` upstream and a profile `slow` asking about `everything__echo`:

  CODEMODE_URL=http://127.0.0.1:PORT/mcp CODEMODE_DIR=/tmp N=200 FLOOD=256 \
    $CODEMODE_TEST_PEERS/venv/bin/python tests/mcp/clients/flood_bench.py

Measures whether clients flooding the server with evals that wait on a human slows other
clients: B's `return 1+1` latency (p50/p99 over N sequential evals) alone, then while FLOOD/64 legacy
sessions keep 64 evals each open that stop at an approval question nobody answers."""
import asyncio, os, sys, time, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("CODEMODE_MODE", "legacy")
from harness import Human, connect, evaluate

ERRS = []
N = int(os.environ.get("N", "200"))
FLOOD = int(os.environ.get("FLOOD", "256"))
ECHO = "return await codemode.everything__echo({ message: 'held' });"

async def latencies(b):
    out = []
    for _ in range(N):
        t = time.perf_counter()
        r = await evaluate(b, "return 1 + 1")
        ERRS.append(r["is_error"])
        out.append((time.perf_counter() - t) * 1000)
        out_err.append(r["is_error"]) if False else None
    out.sort()
    return statistics.median(out), out[int(len(out) * 0.99) - 1]

async def main():
    never = asyncio.Event()
    async def forever():
        await never.wait()
    async with connect(Human(name="B")) as b:
        await evaluate(b, "return 0")
        base = await latencies(b)
        from contextlib import AsyncExitStack
        async with AsyncExitStack() as stack:
            tasks = []
            for _ in range(FLOOD // 64):
                a = await stack.enter_async_context(connect(Human(*[{"action": "accept", "content": {"decision": "approve_once"}, "after": forever}] * 64, name="A")))
                tasks += [asyncio.create_task(evaluate(a, ECHO, "codemode_eval_slow")) for _ in range(64)]
            await asyncio.sleep(5)
            done = [t for t in tasks if t.done()]
            refused = sum(1 for t in done if t.result()["is_error"])
            flooded = await latencies(b)
            for t in tasks: t.cancel()
    print({"n": N, "flood": FLOOD, "refused_at_once": refused, "held": FLOOD - len(done),
           "alone_p50_ms": round(base[0], 2), "alone_p99_ms": round(base[1], 2),
           "flooded_p50_ms": round(flooded[0], 2), "flooded_p99_ms": round(flooded[1], 2), "b_errors": sum(ERRS)})

asyncio.run(main())
