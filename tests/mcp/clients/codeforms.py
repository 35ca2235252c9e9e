"""Code as models write it, through the eval tool (tests/mcp/codeforms.rs): a fenced TypeScript
script calling a real upstream (server-everything); the declarations `get_tools` hands out,
pasted above a script, run as they are; a TypeScript script failing on a known line."""

from __future__ import annotations

from harness import call, connect, evaluate, run

TYPED = """```ts
interface Sum { text: string }
const sum: Sum = { text: (await codemode["everything__get-sum"]({ a: 20, b: 22 })) as string };
const echo: string = await codemode.everything__echo<string>({ message: `sum=${sum!.text}` });
export default async (): Promise<string> => echo;
```"""

FAILING = """```typescript
type N = number;
const n: N = await codemode["everything__get-sum"]({ a: 1, b: 2 }) as unknown as N;
throw new Error(`got ${typeof n}`);
```"""


async def main() -> dict:
    async with connect() as client:
        out: dict = {}
        out["typed"] = await evaluate(client, TYPED)
        got = await call(client, "get_tools", {"names": ["everything__echo"]})
        declarations = got["structured"]["declarations"]
        pasted = declarations + "\nconst r: string = await codemode.everything__echo({ message: 'pasted' });\nreturn r;"
        out["pasted"] = await evaluate(client, pasted)
        out["pasted_lines"] = declarations.count("\n") + 1
        out["failing"] = await evaluate(client, FAILING)
    return out


run(main)
