"""codemode as the client of a conformance client scenario (tests/mcp/conformance/client.rs).

    python codemode_run.py SPEC URL

The suite appends its test server's URL as the last argument and sets MCP_CONFORMANCE_SCENARIO,
and for the scenarios that pre-register a client MCP_CONFORMANCE_CONTEXT (JSON: `client_id`,
`client_secret`, `private_key_pem`, `signing_algorithm`). SPEC is a JSON file the test wrote:

    {"codemode": BIN, "dir": DIR, "script": FILE, "oauth": null | {...}, "browser": null | CMD}

This writes DIR/codemode.json with one upstream, `conformance`, at URL — with an `oauth` object
when SPEC has one, completed from the context's credentials — and runs
`codemode run --config DIR/codemode.json [--browser CMD] FILE` in its place: its result is
this process's stdout, its logs its stderr, its exit status this one's.
"""

import json
import os
import sys

# MCP_CONFORMANCE_CONTEXT's keys → the keys of an upstream's `oauth` object.
OAUTH_KEYS = {
    "client_id": "clientId",
    "client_secret": "clientSecret",
    "private_key_pem": "privateKey",
    "signing_algorithm": "signingAlgorithm",
}


def upstream(url: str, oauth: dict | None) -> dict:
    entry = {"url": url}
    if oauth is not None:
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
        entry["oauth"] = dict(oauth)
        for key, name in OAUTH_KEYS.items():
            if key in context:
                entry["oauth"][name] = context[key]
    return entry


def main() -> None:
    spec_path, url = sys.argv[1], sys.argv[-1]
    with open(spec_path) as f:
        spec = json.load(f)
    config = os.path.join(spec["dir"], "codemode.json")
    with open(config, "w") as f:
        json.dump({"mcpServers": {"conformance": upstream(url, spec.get("oauth"))}}, f)
    argv = [spec["codemode"], "run", "--config", config]
    if spec.get("browser"):
        argv += ["--browser", spec["browser"]]
    argv.append(spec["script"])
    sys.stdout.flush()
    os.execv(argv[0], argv)


main()
