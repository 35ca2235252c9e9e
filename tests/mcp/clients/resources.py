"""The upstreams' resources, templates and prompts through codemode (tests/mcp/resources.rs),
compared with what server-everything itself answers to a direct client:
- listed under `everything__<name>`, their URIs `codemode://everything/<its URI>`, the originals
  in `_meta`; read (static and templated) and got (with arguments) unchanged; completions
  forwarded, and empty for a reference that names no upstream;
- the config's default profile denies `*secret*`-free... (see resources.rs) — its `resources`
  and `prompts` hide and refuse what they do not let through;
- a script reads a resource with `codemode.read_resource`."""

import os
import re
import warnings

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import PromptReference, ResourceTemplateReference

from harness import connect, error_of, evaluate, run

warnings.simplefilter("ignore")

DOC = "demo://resource/static/document/architecture.md"
HIDDEN = "demo://resource/static/document/extension.md"
# An `outputs` rule masks its whole `/contents`: the read cannot be answered in part.
MASKED = "demo://resource/static/document/startup.md"
TEXT = "demo://resource/dynamic/text/1"
ARGS = {"city": "Paris", "state": "IDF"}


def dump(x) -> dict:
    """A result as JSON, without what differs by protocol version or by the instant of reading
    (server-everything stamps its dynamic text resources with the time)."""
    out = x.model_dump(by_alias=True, exclude_none=True, mode="json")
    for key in ("resultType", "ttlMs", "cacheScope"):
        out.pop(key, None)
    for contents in out.get("contents", []):
        if "text" in contents:
            contents["text"] = re.sub(r"created at .*", "created at <time>", contents["text"])
    return out


def mapped(item: dict, key: str, meta_key: str, server: str = "everything") -> dict:
    """What codemode should list for an upstream's `item`."""
    out = dict(item)
    out["name"] = f"{server}__{item['name']}"
    meta = dict(item.get("_meta", {}))
    meta["codemode/server"] = server
    if key:
        out[key] = f"codemode://{server}/{item[key]}"
        meta[meta_key] = item[key]
    else:
        meta[meta_key] = item["name"]
    out["_meta"] = meta
    return out


def mapped_read(read: dict, server: str = "everything") -> dict:
    out = dict(read)
    out["contents"] = [dict(c, uri=f"codemode://{server}/{c['uri']}") for c in read["contents"]]
    return out


async def main() -> dict:
    everything = StdioServerParameters(command=os.environ["EVERYTHING_BIN"], args=["stdio"])
    async with Client(everything, mode="legacy") as d:
        direct = {
            "resources": [dump(r) for r in (await d.list_resources()).resources],
            "templates": [dump(t) for t in (await d.list_resource_templates()).resource_templates],
            "prompts": [dump(p) for p in (await d.list_prompts()).prompts],
            "doc": dump(await d.read_resource(DOC)),
            "text": dump(await d.read_resource(TEXT)),
            "prompt": dump(await d.get_prompt("args-prompt", ARGS)),
            "complete": dump(
                await d.complete(PromptReference(name="completable-prompt"), {"name": "department", "value": "S"})
            ),
        }
    async with connect() as c:
        got = {
            "resources": [dump(r) for r in (await c.list_resources()).resources],
            "templates": [dump(t) for t in (await c.list_resource_templates()).resource_templates],
            "prompts": [dump(p) for p in (await c.list_prompts()).prompts],
            "doc": dump(await c.read_resource(f"codemode://everything/{DOC}")),
            "text": dump(await c.read_resource(f"codemode://everything/{TEXT}")),
            "prompt": dump(await c.get_prompt("everything__args-prompt", ARGS)),
            "complete": dump(
                await c.complete(
                    PromptReference(name="everything__completable-prompt"), {"name": "department", "value": "S"}
                )
            ),
        }
        refused = {
            "hidden_read": await error_of(c.read_resource(f"codemode://everything/{HIDDEN}")),
            "hidden_prompt": await error_of(c.get_prompt("everything__simple-prompt")),
            "unmapped": await error_of(c.read_resource(DOC)),
            "other_server": await error_of(c.read_resource(f"codemode://nosuch/{DOC}")),
            "masked_away": await error_of(c.read_resource(f"codemode://everything/{MASKED}")),
            "unknown_complete": dump(
                await c.complete(ResourceTemplateReference(uri="demo://x/{y}"), {"name": "y", "value": ""})
            ),
        }
        script = await evaluate(
            c,
            f'return await codemode.read_resource({{ server: "everything", uri: "{DOC}" }});',
        )
        script_hidden = await evaluate(
            c,
            f'try {{ await codemode.read_resource({{ server: "everything", uri: "{HIDDEN}" }}); return "read"; }}'
            ' catch (e) { return [e.name, e.message]; }',
        )
    hidden_name = "everything__extension.md"
    expected = {
        "resources": [mapped(r, "uri", "codemode/uri") for r in direct["resources"] if r["name"] != "extension.md"],
        "templates": [mapped(t, "uriTemplate", "codemode/uriTemplate") for t in direct["templates"]],
        "prompts": [mapped(p, "", "codemode/name") for p in direct["prompts"] if p["name"] != "simple-prompt"],
        "doc": mapped_read(direct["doc"]),
        "text": mapped_read(direct["text"]),
        "prompt": direct["prompt"],
        "complete": direct["complete"],
    }
    return {
        "got": got,
        "expected": expected,
        "counts": {k: len(v) for k, v in direct.items() if isinstance(v, list)},
        "hidden_listed": any(r["name"] == hidden_name for r in got["resources"]),
        "refused": refused,
        "script": script["structured"]["result"],
        "script_expected": direct["doc"],
        "script_hidden": script_hidden["structured"]["result"],
    }


run(main)
