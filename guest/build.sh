#!/usr/bin/env bash
# Builds the codemode guest (QuickJS via javy) for wasm32-wasip1 with Debian's second Rust toolchain,
# as described in shared/guest-toolchain.md, and writes guest/codemode_guest.wasm.
#
#   guest/build.sh           build and replace the committed module
#   guest/build.sh --check   rebuild from source in a temporary folder; fail unless byte-identical
#   guest/build.sh --clippy  lint the guest (-D warnings) with Debian's clippy for that toolchain
#
# The host never needs this: `cargo build`/`cargo test` use the committed .wasm.
#
# Lints need this toolchain too: the guest compiles only for wasm32-wasip1 (QuickJS's C code,
# wasi-libc's dlmalloc and the host imports), which rustup's toolchain here cannot target.
# `rust-web-clippy` is the clippy built with `rustc-web`, so it checks the guest as it is built.
# Formatting needs no toolchain of its own: `cargo fmt --manifest-path guest/Cargo.toml`.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mode="${1:-build}"
case "$mode" in build|--check|--clippy) ;; *) echo "usage: guest/build.sh [--check|--clippy]" >&2; exit 2 ;; esac

packages=(rustc-web cargo-web rust-web-src wasi-libc clang-16 lld-16 libclang-rt-16-dev-wasm32)
[ "$mode" = --clippy ] && packages+=(rust-web-clippy)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "guest/build.sh: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >&2
fi

std_src="$(ls -d /usr/src/rustc-*/library 2>/dev/null | sort -V | tail -n 1)"
[ -n "$std_src" ] || { echo "guest/build.sh: rust-web-src did not install the std sources" >&2; exit 1; }

# QuickJS as rquickjs-sys 0.12.2 ships it, with guest/quickjs-wasi.patch applied (direct
# calls into dlmalloc; see guest/src/heap.rs). Cargo.toml's [patch.crates-io] builds it from
# target/patched/rquickjs-sys, made here from the published crate, checked against this hash.
quickjs_crate=rquickjs-sys-0.12.2
quickjs_crate_sha256=a13ac243b86a74120814ef7e9e30ad5a2c1199b7b9963b1cf7c84e4cdc1cad99

patch_quickjs() { # $1 = a folder holding Cargo.toml and quickjs-wasi.patch
  local dir="$1" dest="$1/target/patched/rquickjs-sys"
  local want
  want="$quickjs_crate_sha256 $(sha256sum "$dir/quickjs-wasi.patch" | cut -d' ' -f1)"
  [ "$(cat "$dest/.codemode-patched" 2>/dev/null)" = "$want" ] && return 0
  local crate
  crate="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"$quickjs_crate.crate" 2>/dev/null | head -n 1 || true)"
  if [ -z "$crate" ]; then
    crate="$dir/target/$quickjs_crate.crate"
    mkdir -p "$dir/target"
    curl -sSfL -o "$crate" "https://static.crates.io/crates/rquickjs-sys/$quickjs_crate.crate"
  fi
  if [ "$(sha256sum "$crate" | cut -d' ' -f1)" != "$quickjs_crate_sha256" ]; then
    echo "guest/build.sh: $crate does not have the expected sha256 $quickjs_crate_sha256" >&2
    return 1
  fi
  # rquickjs-sys's build script only reruns when its own patches change: drop its earlier build.
  rm -rf "$dest" "$dir"/target/wasm32-wasip1/release/{build,.fingerprint}/rquickjs-sys-*
  mkdir -p "$dest"
  tar -xzf "$crate" -C "$dest" --strip-components=1
  patch --quiet -p1 -d "$dest" < "$dir/quickjs-wasi.patch"
  echo "$want" > "$dest/.codemode-patched"
}

guest_env() { # $1 = a folder holding Cargo.toml: the environment of every cargo run in it
  local dir="$1"
  export RUSTC=/usr/bin/rustc
  export RUSTC_BOOTSTRAP=1
  export __CARGO_TESTS_ONLY_SRC_ROOT="$std_src"
  export CARGO_TARGET_DIR="$dir/target"
  # Paths are remapped so that the module does not depend on where it was built.
  # bulk-memory: memcpy/memset become memory.copy/fill (the host's memmove); nontrapping-fptoint:
  # float-to-int conversions without range-check branches. Both standard, on in wasmtime by
  # default; 5-9% less time on JSON, regex and the object kernel (docs/PERFORMANCE.md).
  export RUSTFLAGS="-C linker=/usr/lib/llvm-16/bin/wasm-ld -C link-self-contained=no \
    -C target-feature=+bulk-memory,+nontrapping-fptoint \
    -L /usr/lib/wasm32-wasi -C link-arg=/usr/lib/wasm32-wasi/crt1-reactor.o \
    -C link-arg=-zstack-size=1048576 \
    --remap-path-prefix=$dir=/guest --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo \
    --remap-path-prefix=$std_src=/rust/library"
  export RQUICKJS_SYS_NO_WASI_SDK=1
  export LIBCLANG_PATH=/usr/lib/llvm-16/lib
  export CC_wasm32_wasip1=/usr/bin/clang-16
  export AR_wasm32_wasip1=/usr/lib/llvm-16/bin/llvm-ar
  # -UEMSCRIPTEN: rquickjs-sys defines EMSCRIPTEN for WASI, which turns off QuickJS's
  # computed-goto dispatch (~25% slower); see shared/notes/perf-facts.md.
  export CFLAGS_wasm32_wasip1="--target=wasm32-wasi --sysroot=/usr -UEMSCRIPTEN -mbulk-memory -mnontrapping-fptoint -ffile-prefix-map=${CARGO_HOME:-$HOME/.cargo}=/cargo -ffile-prefix-map=$dir=/guest"
  export BINDGEN_EXTRA_CLANG_ARGS_wasm32_wasip1="--target=wasm32-wasi --sysroot=/usr"
}

build_in() { # $1 = a folder holding Cargo.toml, Cargo.lock, quickjs-wasi.patch, src/, abi (a link to ../abi)
  local dir="$1"
  patch_quickjs "$dir" || return 1
  (
    cd "$dir"
    guest_env "$dir"
    /usr/bin/cargo build --quiet --locked --release -Zbuild-std=std,panic_abort --target wasm32-wasip1
  ) || return 1 # errexit does not reach into the command substitution that calls this
  echo "$dir/target/wasm32-wasip1/release/codemode_guest.wasm"
}

lint_in() { # $1 = as build_in's
  local dir="$1"
  patch_quickjs "$dir" || return 1
  (
    cd "$dir"
    guest_env "$dir"
    # The same flags and profile as the build, so that the two share QuickJS's build in target/.
    # cargo-clippy runs $CARGO (else the first cargo on PATH, rustup's) and its own clippy-driver.
    CARGO=/usr/bin/cargo /usr/bin/cargo-clippy clippy --quiet --locked --release \
      -Zbuild-std=std,panic_abort --target wasm32-wasip1 -- -D warnings
  )
}

if [ "$mode" = --clippy ]; then
  lint_in "$here"
  echo "guest/build.sh --clippy: no warnings" >&2
elif [ "$mode" = build ]; then
  out="$(build_in "$here")"
  cp "$out" "$here/codemode_guest.wasm"
  echo "guest/build.sh: wrote guest/codemode_guest.wasm ($(wc -c < "$here/codemode_guest.wasm") bytes, sha256 $(sha256sum "$here/codemode_guest.wasm" | cut -c1-16))" >&2
else
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  # The same layout as the repository's: the guest's abi is a link to ../abi (the ABI's
  # constants, shared with the runtime).
  mkdir "$tmp/guest" "$tmp/abi"
  cp -r "$here/Cargo.toml" "$here/Cargo.lock" "$here/quickjs-wasi.patch" "$here/src" "$tmp/guest/"
  cp -P "$here/abi" "$tmp/guest/abi"
  cp -r "$here/../abi/Cargo.toml" "$here/../abi/src" "$tmp/abi/"
  out="$(build_in "$tmp/guest")"
  if cmp -s "$out" "$here/codemode_guest.wasm"; then
    echo "guest/build.sh --check: the committed module is reproducible ($(sha256sum "$out" | cut -c1-16))" >&2
  else
    echo "guest/build.sh --check: FAILED: rebuilding from source gives $(sha256sum "$out" | cut -c1-16), the committed module is $(sha256sum "$here/codemode_guest.wasm" | cut -c1-16)" >&2
    echo "  (rebuild with guest/build.sh and commit guest/codemode_guest.wasm)" >&2
    exit 1
  fi
fi
