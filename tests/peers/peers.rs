//! Where the real MCP peers installed by `tests/peers/setup.sh` are, for integration tests.
//!
//! Include it with `#[path = "<relative path>/tests/peers/peers.rs"] mod peers;`. Call
//! [`ensure_installed`] first (it runs the setup script once per test process; the script is
//! a no-op when the pinned versions are already installed); the locators panic with
//! "run tests/peers/setup.sh first" when a peer is missing. Missing peers are failures, never
//! skips.
//!
//! Location: `$CODEMODE_TEST_PEERS` if set, else `<repo>/target/test-peers`.
#![allow(
    dead_code,
    reason = "each test crate that includes this file uses only some helpers"
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The repository root: the first ancestor of this crate's manifest dir holding
/// `tests/peers/setup.sh`.
pub fn repo_root() -> PathBuf {
    let start = Path::new(env!("CARGO_MANIFEST_DIR"));
    start
        .ancestors()
        .find(|dir| dir.join("tests/peers/setup.sh").is_file())
        .unwrap_or_else(|| panic!("no tests/peers/setup.sh above {}", start.display()))
        .to_path_buf()
}

/// The install directory.
pub fn peers_dir() -> PathBuf {
    match std::env::var_os("CODEMODE_TEST_PEERS") {
        Some(dir) => PathBuf::from(dir),
        None => repo_root().join("target/test-peers"),
    }
}

/// Runs `tests/peers/setup.sh` once per process (it installs into [`peers_dir`], a no-op
/// when already installed). Panics with the script's output when it fails.
pub fn ensure_installed() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let script = repo_root().join("tests/peers/setup.sh");
        let out = Command::new("bash")
            .arg(&script)
            .output()
            .unwrap_or_else(|e| panic!("could not run {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "{} failed ({}):\n{}{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

fn existing(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run tests/peers/setup.sh first",
        path.display()
    );
    path
}

/// The venv's Python (has `mcp==2.3.0`).
pub fn python() -> PathBuf {
    existing(peers_dir().join("venv/bin/python"))
}

/// The npm `node_modules` directory (server-everything, server-filesystem, the TS SDK).
pub fn node_modules() -> PathBuf {
    existing(peers_dir().join("node/node_modules"))
}

/// `@modelcontextprotocol/server-everything` over stdio: `(program, args)`. The program is
/// a `#!/usr/bin/env node` script, so its pid is node's.
pub fn everything_server_cmd() -> (PathBuf, Vec<String>) {
    (
        existing(node_modules().join(".bin/mcp-server-everything")),
        vec!["stdio".into()],
    )
}

/// `@modelcontextprotocol/server-filesystem` allowed to access `dir` only.
pub fn filesystem_server_cmd(dir: &Path) -> (PathBuf, Vec<String>) {
    let program = existing(node_modules().join(".bin/mcp-server-filesystem"));
    (program, vec![dir.display().to_string()])
}

/// `mcp-server-time` (PyPI), with UTC as its local time zone.
pub fn time_server_cmd() -> (PathBuf, Vec<String>) {
    let program = existing(peers_dir().join("venv/bin/mcp-server-time"));
    (program, vec!["--local-timezone".into(), "UTC".into()])
}
