//! OAuth logins to an HTTP upstream (tests/cli/oauth_server.py: the Python SDK's own
//! authorization server in front of an MCP server): `codemode auth login|status|logout`, a run
//! using the saved login (refreshed, the refresh token rotating), a run without one failing
//! with the `codemode auth login` hint, and a login the server no longer knows (its client
//! registration gone).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use codemode_test_support::services::free_port;
use codemode_test_support::{peers, scratch_dir};
use serde_json::json;

use super::{codemode, text};

/// Follows the authorization server's redirect back to codemode's loopback listener.
const BROWSER: &str = "curl -sSL -o /dev/null";

/// The upstream of oauth_server.py; killed when dropped.
struct Guarded {
    child: Child,
    port: u16,
    events: PathBuf,
}

impl Guarded {
    /// Starts it on a free port, access tokens living `access_ttl` seconds, and waits until it
    /// accepts connections.
    fn start(dir: &Path, access_ttl: u32) -> Guarded {
        peers::ensure_installed();
        let port = free_port();
        let events = dir.join("events.txt");
        let child = Command::new(peers::python())
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/cli/oauth_server.py"
            ))
            .arg(port.to_string())
            .arg(&events)
            .env("ACCESS_TTL", access_ttl.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start oauth_server.py");
        let mut server = Guarded {
            child,
            port,
            events,
        };
        server.wait_listening();
        server
    }

    fn wait_listening(&mut self) {
        for _ in 0..600 {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("oauth_server.py exited: {status}");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("oauth_server.py did not listen on {}", self.port);
    }

    /// Its events so far, one per line.
    fn events(&self) -> Vec<String> {
        std::fs::read_to_string(&self.events)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A config fronting the upstream as `guarded` (with `"oauth": {}`), its state directory of
/// its own, and a script calling its tool.
fn setup(dir: &Path, port: u16) -> (PathBuf, PathBuf) {
    let config = dir.join("config.json");
    let entry = json!({"url": format!("http://127.0.0.1:{port}/mcp"), "oauth": {}});
    let durable = json!({"dir": dir.join("state")});
    std::fs::write(
        &config,
        json!({"mcpServers": {"guarded": entry}, "durable": durable}).to_string(),
    )
    .expect("write the config");
    let script = dir.join("whoami.js");
    std::fs::write(&script, "return await codemode.guarded__whoami({});").expect("write");
    (config, script)
}

fn codemode_in(args: &[&str]) -> Output {
    codemode()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run codemode")
}

/// `codemode auth status` with the expiry left out (it moves with the clock).
fn status(config: &str) -> String {
    let out = codemode_in(&["auth", "status", "--config", config]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|line| {
            line.split("  ")
                .filter(|field| !field.starts_with("expires "))
                .collect::<Vec<_>>()
                .join("  ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The client the server registered for the one login so far.
fn client_of(server: &Guarded) -> String {
    let issued: Vec<String> = server
        .events()
        .iter()
        .filter_map(|e| e.strip_prefix("issued ").map(str::to_string))
        .collect();
    assert_eq!(issued.len(), 1, "{:?}", server.events());
    issued[0].clone()
}

#[test]
fn a_login_is_saved_used_refreshed_and_forgotten() {
    let dir = scratch_dir("cli", "oauth-login");
    // Tokens that always look about to expire: every run refreshes first.
    let server = Guarded::start(&dir, 5);
    let (config, script) = setup(&dir, server.port);
    let (config, script) = (config.to_str().unwrap(), script.to_str().unwrap());

    assert_eq!(status(config), "guarded  needs login  -  no scopes");
    // No login, no terminal, no --browser: the call fails at once with the hint.
    let out = codemode_in(&["run", "--config", config, script]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "ToolError: upstream server `guarded` needs login: codemode auth login guarded"
        ),
        "{}",
        text(&out.stderr)
    );

    let out = codemode_in(&[
        "auth",
        "login",
        "guarded",
        "--config",
        config,
        "--browser",
        BROWSER,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let client = client_of(&server);
    assert_eq!(status(config), "guarded  logged in  scopes tools");

    // Every request refreshes first (a token with under 30 s left is renewed), each with the
    // refresh token the one before got in exchange (it rotates), read back from the store —
    // in the second run too.
    let mut refreshed_before = 0;
    for _ in 0..2 {
        let out = codemode_in(&["run", "--config", config, script]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let said: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(said, json!({"result": format!("hello {client}")}));
        let events = server.events();
        let refreshed = events
            .iter()
            .filter(|e| **e == format!("refreshed {client}"))
            .count();
        assert!(refreshed > refreshed_before, "{events:?}");
        assert!(
            !events.iter().any(|e| e.starts_with("refused")),
            "{events:?}"
        );
        refreshed_before = refreshed;
    }

    let out = codemode_in(&["auth", "logout", "guarded", "--config", config]);
    assert_eq!(text(&out.stdout), "guarded: logged out\n");
    assert_eq!(status(config), "guarded  needs login  -  no scopes");
}

#[test]
fn a_refresh_token_the_server_forgot_asks_for_a_new_login() {
    let dir = scratch_dir("cli", "oauth-forgotten");
    let (config, script) = {
        let server = Guarded::start(&dir, 5);
        let (config, script) = setup(&dir, server.port);
        let out = codemode_in(&[
            "auth",
            "login",
            "guarded",
            "--config",
            config.to_str().unwrap(),
            "--browser",
            BROWSER,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        (config, script)
    };
    // The same address, a server that knows none of the tokens it gave before.
    let port =
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&config).unwrap())
            .unwrap()["mcpServers"]["guarded"]["url"]
            .as_str()
            .unwrap()
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/mcp")
            .parse::<u16>()
            .unwrap();
    let mut server = Guarded {
        child: Command::new(peers::python())
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/cli/oauth_server.py"
            ))
            .arg(port.to_string())
            .arg(dir.join("events-2.txt"))
            .env("ACCESS_TTL", "5")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("restart oauth_server.py"),
        port,
        events: dir.join("events-2.txt"),
    };
    server.wait_listening();
    let (config, script) = (config.to_str().unwrap(), script.to_str().unwrap());
    let out = codemode_in(&["run", "--config", config, script]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "ToolError: upstream server `guarded` needs login: codemode auth login guarded"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("internal"), "{stderr}");
    assert_eq!(server.events(), Vec::<String>::new());
    // The login the server refused is gone.
    assert_eq!(status(config), "guarded  needs login  -  no scopes");
}
