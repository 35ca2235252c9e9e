#!/usr/bin/env bash
# Counts each library crate's reachable public items as rustdoc documents them: one page per
# struct, enum, trait, fn, type alias, constant, static or macro, wherever in the crate it is
# reachable, re-exports of other crates' items included; rustdoc's "Redirecting to" pages (an
# item's second path) are not counted. The count is what an embedder has to learn, so it is the
# measure of a crate's public surface (issue 25: tens of items per crate).
#
# Usage: scripts/public-items.sh [--no-build]
#   builds the docs (`cargo doc --workspace --no-deps`) unless --no-build, then prints
#   "<crate> <count>" per crate, sorted by count. Uses CARGO_TARGET_DIR if set.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" != "--no-build" ]]; then
    cargo doc --workspace --no-deps --quiet
fi
doc="${CARGO_TARGET_DIR:-target}/doc"
for crate in abi runtime config script policies store upstream host; do
    dir="$doc/codemode_$crate"
    [[ -d "$dir" ]] || { echo "no docs for codemode_$crate in $doc" >&2; exit 1; }
    count=$(find "$dir" -type f \
        \( -name 'struct.*.html' -o -name 'enum.*.html' -o -name 'trait.*.html' \
           -o -name 'fn.*.html' -o -name 'type.*.html' -o -name 'constant.*.html' \
           -o -name 'static.*.html' -o -name 'macro.*.html' \) \
        -exec grep -L 'Redirecting to' {} + | wc -l)
    echo "$crate $count"
done | sort -k2 -n
