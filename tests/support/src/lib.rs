//! What more than one of codemode's test binaries needs, as a dev-dependency (instead of
//! sharing source files through `#[path]`):
//!
//! - [`peers`]: the real MCP peers (npm and PyPI packages, pinned in `setup.sh` next to this
//!   crate's manifest) that the MCP tests run against, installed on first use;
//! - [`services`]: real Redis and HAProxy processes on loopback ports of their own (Debian's
//!   packages, installed by `debian.sh` when missing);
//! - [`scratch_dir`]: a fresh directory per test.

pub mod peers;
pub mod services;

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
