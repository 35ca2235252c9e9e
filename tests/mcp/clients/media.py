"""Media through codemode (tests/mcp/media.rs): each script's result and the MCP result a client
gets for it — its content blocks (text, and images or resources with their bytes), its text and
its structured content."""

from typing import Any

from harness import connect, run

SCRIPTS = {
    # server-everything's tiny image, returned inside an object beside its caption.
    "tiny": """
const r = await codemode["everything__get-tiny-image"]({});
return { caption: r[0], shot: r[1], again: [r[1]] };
""",
    # Two of them over a 6 KiB budget: the second is dropped with a note.
    "budget": """
const a = await codemode["everything__get-tiny-image"]({});
const b = await codemode["everything__get-tiny-image"]({});
return [a[1], b[1]];
""",
    # The output policy masks the image of `media__secret_image`: the script never sees its id.
    "masked": """
const r = await codemode.media__secret_image({});
return r;
""",
    # An embedded blob resource, and a reference to an id this eval never received.
    "resource": """
const r = await codemode.media__blob({});
return { r, old: { type: "image", id: "0123456789abcdef0123456789abcdef" } };
""",
    # A 50 MB image (67 MB of base64 on one line), then a small one from the same server.
    "fifty_mb": """
const big = await codemode.media__image({ size: 50 * 1024 * 1024 }).catch(e => e.message);
const small = await codemode.media__image({ size: 10 });
return { big, small: small[1] };
""",
}


def block(b: Any) -> dict:
    """A content block as JSON (bytes included)."""
    return b.model_dump(by_alias=True, exclude_none=True, mode="json")


async def main() -> dict:
    out = {}
    async with connect() as client:
        for name, code in SCRIPTS.items():
            result = await client.call_tool("eval", {"code": code})
            out[name] = {
                "is_error": bool(result.is_error),
                "content": [block(b) for b in result.content],
                "structured": result.structured_content,
            }
    return out


run(main)
