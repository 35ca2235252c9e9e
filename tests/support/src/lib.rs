//! What more than one of codemode's test binaries needs, as a dev-dependency (instead of
//! sharing source files through `#[path]`):
//!
//! - [`peers`]: the real MCP peers (npm and PyPI packages, pinned in `setup.sh` next to this
//!   crate's manifest) that the MCP tests run against, installed on first use;
//! - [`services`]: real Redis and HAProxy processes on loopback ports of their own (Debian's
//!   packages, installed by `debian.sh` when missing);
//! - [`tls`]: an HTTPS server with a test CA's certificate, for codemode's HTTPS clients;
//! - [`helpers`]: Python helpers on loopback (the OTLP trace receiver, a test's own scripts);
//! - [`scratch_dir`]: a fresh directory per test.

pub mod helpers;
pub mod peers;
pub mod services;
pub mod tls;

use std::path::PathBuf;

/// `<system temp>/codemode-<area>-<name>-<pid>`, emptied if it exists, canonicalised (macOS
/// puts temp under a symlink, and servers given this path report the resolved one).
pub fn scratch_dir(area: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("codemode-{area}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("could not create {}: {e}", dir.display()));
    dir.canonicalize()
        .unwrap_or_else(|e| panic!("could not resolve {}: {e}", dir.display()))
}

/// Every record of the `*.jsonl` audit files of `dir`, files in name order (none when `dir`
/// does not exist yet).
pub fn audit_records(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.expect("read an audit dir").path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .expect("read an audit file")
                .lines()
                .map(|l| serde_json::from_str(l).expect("an audit line is JSON"))
                .collect::<Vec<serde_json::Value>>()
        })
        .collect()
}

/// What QuickJS says when a script calls something that is not a function, in the committed
/// guest ([`changed_guest`] changes it).
pub const NOT_A_FUNCTION: &[u8] = b"not a function";
/// [`NOT_A_FUNCTION`] in the guest [`changed_guest`] makes.
pub const CHANGED_NOT_A_FUNCTION: &[u8] = b"NOT A FUNCTION";

/// A second guest for deploy tests: `wasm` (the committed guest) with every
/// [`NOT_A_FUNCTION`] in its read-only data changed to [`CHANGED_NOT_A_FUNCTION`] (same length,
/// so the module stays valid). Those bytes lie in pages no script writes, so a saved eval never
/// carries them: after a resume, a script reads its own guest's message only if the runtime
/// really instantiated that guest.
pub fn changed_guest(wasm: &[u8]) -> Vec<u8> {
    let mut wasm = wasm.to_vec();
    let mut replaced = 0;
    let mut at = 0;
    while let Some(found) = wasm[at..]
        .windows(NOT_A_FUNCTION.len())
        .position(|w| w == NOT_A_FUNCTION)
    {
        let start = at + found;
        wasm[start..start + CHANGED_NOT_A_FUNCTION.len()].copy_from_slice(CHANGED_NOT_A_FUNCTION);
        at = start + CHANGED_NOT_A_FUNCTION.len();
        replaced += 1;
    }
    assert!(replaced > 0, "the guest no longer holds {NOT_A_FUNCTION:?}");
    wasm
}
