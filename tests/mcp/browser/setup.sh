#!/usr/bin/env bash
# Installs what the approval page's browser test needs, idempotently:
#   - Debian's `chromium` and `chromium-driver` (apt-get, when /usr/bin/chromium is missing; not
#     pinned: Debian's security archive keeps only the current build);
#   - `playwright-core`, pinned, into target/test-browser/node_modules (override the directory
#     with CODEMODE_TEST_BROWSER=/some/dir).
# A stamp makes a second run a no-op. Quiet on success; on failure the reason and the log.
set -euo pipefail

PLAYWRIGHT="playwright-core@1.65.1"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"  # this script is <repo>/tests/mcp/browser/setup.sh
dest="${CODEMODE_TEST_BROWSER:-$root/target/test-browser}"
stamp="$dest/.stamp"
want="v1 $PLAYWRIGHT"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x /usr/bin/chromium ]]; then
  exit 0
fi
mkdir -p "$dest"
exec 9>"$dest/.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
log="$dest/install.log"
: >"$log"
fail() {
  echo "tests/mcp/browser/setup.sh: $1" >&2
  tail -n 40 "$log" >&2
  exit 1
}
if [[ ! -x /usr/bin/chromium ]]; then
  sudo=""
  if [[ "$(id -u)" != 0 ]]; then sudo="sudo -n"; fi
  $sudo apt-get update >>"$log" 2>&1 || fail "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends chromium chromium-driver \
    >>"$log" 2>&1 || fail "apt-get install chromium chromium-driver failed"
fi
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  command -v npm >/dev/null 2>&1 || fail "\`npm\` is not on PATH"
  (cd "$dest" && [[ -f package.json ]] || echo '{"private": true}' >"$dest/package.json")
  npm install --prefix "$dest" --no-audit --no-fund --save-exact "$PLAYWRIGHT" >>"$log" 2>&1 \
    || fail "npm install $PLAYWRIGHT failed"
  echo "$want" >"$stamp"
fi
