//! OAuth logins to an HTTP upstream (tests/cli/oauth_server.py: the Python SDK's own
//! authorization server in front of an MCP server): `codemode auth login|status|logout`, a run
//! using the saved login (refreshed, the refresh token rotating), a run without one failing
//! with the `codemode auth login` hint, and a login the server no longer knows (its client
//! registration gone).

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use codemode_test_support::scratch_dir;
use codemode_test_support::services::OAuthUpstream;
use serde_json::json;

use super::{codemode, text};

/// Follows the authorization server's redirect back to codemode's loopback listener.
const BROWSER: &str = "curl -sSL -o /dev/null";

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

/// `codemode auth login guarded --config CONFIG --browser BROWSER`.
fn login(config: &str, browser: &str) -> Output {
    codemode_in(&[
        "auth",
        "login",
        "guarded",
        "--config",
        config,
        "--browser",
        browser,
    ])
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
fn client_of(server: &OAuthUpstream) -> String {
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
    let server = OAuthUpstream::start(&dir.join("events.txt"), 5);
    let (config, script) = setup(&dir, server.port());
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

    let out = login(config, BROWSER);
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
    let (config, script, port) = {
        let server = OAuthUpstream::start(&dir.join("events.txt"), 5);
        let (config, script) = setup(&dir, server.port());
        let out = login(config.to_str().unwrap(), BROWSER);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        (config, script, server.port())
    };
    // The same address, a server that knows none of the clients and tokens it gave before.
    let server = OAuthUpstream::start_on(port, &dir.join("events-2.txt"), 5);
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

/// A "browser" that first sends codemode a redirect with another `state` than the login sent
/// (as a forged or stale one would come), then the real one; it prints both answers' statuses.
const FORGE_STATE: &str = r#"
import sys, urllib.error, urllib.parse, urllib.request
class Stop(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None
try:
    urllib.request.build_opener(Stop).open(sys.argv[-1])
    sys.exit("no redirect")
except urllib.error.HTTPError as e:
    back = urllib.parse.urlsplit(e.headers["Location"])
query = dict(urllib.parse.parse_qsl(back.query))
forged = back._replace(query=urllib.parse.urlencode(dict(query, state="forged"))).geturl()
statuses = []
try:
    urllib.request.urlopen(forged)
except urllib.error.HTTPError as e:
    statuses.append(e.code)
statuses.append(urllib.request.urlopen(back.geturl()).status)
with open(sys.argv[1], "w") as f:
    f.write(" ".join(map(str, statuses)))
"#;

#[test]
fn a_redirect_with_another_state_is_turned_away_and_the_login_goes_on() {
    let dir = scratch_dir("cli", "oauth-state");
    let server = OAuthUpstream::start(&dir.join("events.txt"), 3600);
    let (config, _) = setup(&dir, server.port());
    let forge = dir.join("forge.py");
    std::fs::write(&forge, FORGE_STATE).expect("write the browser");
    let statuses = dir.join("statuses.txt");
    let browser = format!("python3 {} {}", forge.display(), statuses.display());
    let config = config.to_str().unwrap();
    let out = login(config, &browser);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The forged redirect got a 400 and changed nothing; the real one completed the login.
    assert_eq!(std::fs::read_to_string(&statuses).unwrap(), "400 200");
    assert!(
        text(&out.stderr).contains(
            "a request came to the login's redirect with another `state` (forged or stale); ignored"
        ),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.events().len(), 1, "{:?}", server.events());
    assert_eq!(status(config), "guarded  logged in  scopes tools");
}
