import asyncio, json, os
from harness import call, connect, evaluate, run
CODE = 'return await codemode.web__add({a: 2, b: 3})'
TPS = ["00-" + "a"*32 + "-" + "b"*16 + "-01\r\nX-Evil: 1", "00-" + "a"*32 + "-" + "b"*16 + "-01\nX-Evil: 1", "01-" + "a"*32 + "-" + "b"*16 + "-01-x\r\nX-Evil: 2", "z"*100000, {"nested": 1}, "00-" + "a"*32 + "-" + "b"*16 + "-01-" + "q"*100000]
async def main():
    out = {}
    async with connect() as client:
        for i, tp in enumerate(TPS):
            try:
                r = await asyncio.wait_for(evaluate(client, CODE, "codemode_eval_gate", meta={"traceparent": tp, "tracestate": "x\r\ny: 1"}), 30)
                out[str(i)] = r["text"][:150]
            except Exception as e:
                out[str(i)] = "EXC %r" % e
    return out
run(main)
