#!/usr/bin/env bash
# Installs Debian packages a test needs when their program is missing, idempotently:
#   debian.sh PROGRAM PACKAGE [PROGRAM PACKAGE]...
# e.g. `debian.sh redis-server redis-server haproxy haproxy`. Not pinned: Debian's archive keeps
# only the current build of a release. Runs apt-get as root, else through `sudo -n`. Several test
# processes may call it at once: a lock makes them take turns. Quiet on success; on failure the
# reason and the end of apt's log.
set -euo pipefail

missing=()
while (($# >= 2)); do
  if ! command -v "$1" >/dev/null 2>&1 && [[ ! -x "/usr/sbin/$1" && ! -x "/usr/bin/$1" ]]; then
    missing+=("$2")
  fi
  shift 2
done
((${#missing[@]} == 0)) && exit 0

lockdir="${TMPDIR:-/tmp}"
exec 9>"$lockdir/codemode-debian-install.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
log="$lockdir/codemode-debian-install.log"
: >"$log"
sudo=""
if [[ "$(id -u)" != 0 ]]; then sudo="sudo -n"; fi
fail() {
  echo "tests/support/debian.sh: $1" >&2
  tail -n 40 "$log" >&2
  exit 1
}
$sudo apt-get update >>"$log" 2>&1 || fail "apt-get update failed"
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}" \
  >>"$log" 2>&1 || fail "apt-get install ${missing[*]} failed"
