//! An upstream that needs an OAuth login, through `codemode serve` over HTTP
//! (clients/oauth_login.py against the Python SDK's own authorization server): named as such in
//! the eval tool's description and `search_tools`, calls to it refused at once with the
//! `codemode auth login` hint, then — after a login made by another process — noticed without a
//! restart, and answered.

use serde_json::json;

use crate::harness::{Mode, Setup, Transport, assert_json};
use codemode_test_support::services::OAuthUpstream;

#[test]
fn an_upstream_needing_a_login_says_so_and_works_once_someone_logs_in() {
    let mut upstream = None;
    let setup = Setup::new("oauth_login", Transport::Http, |scratch| {
        let server = OAuthUpstream::start(&scratch.path("events.txt"), 3600);
        let config = json!({
            "mcpServers": {"guarded": {"url": server.url(), "oauth": {}}},
            "durable": {"dir": scratch.path("state")},
        });
        upstream = Some(server);
        config
    });
    let browser = std::path::PathBuf::from("curl -sSL -o /dev/null");
    let obs = setup.python(
        "oauth_login.py",
        Mode::Legacy,
        &[("CODEMODE_LOGIN_BROWSER", &browser)],
    );
    let upstream = upstream.expect("the upstream started");
    let client = upstream
        .events()
        .iter()
        .find_map(|e| e.strip_prefix("issued ").map(str::to_string))
        .expect("a login was made");
    let hint = "needs login: codemode auth login guarded";
    assert_json(
        "before and after the login",
        &obs,
        &json!({
            "before": format!("guarded ({hint})"),
            "searched": {"results": [], "unavailable": [
                {"server": "guarded", "state": "needs login", "error": hint}]},
            "refused": {"is_error": true,
                "message": format!("ToolError: upstream server `guarded` {hint}")},
            "login": {"code": 0, "stdout": ["guarded", "logged in"], "stderr": ""},
            "after": "guarded (1 tool)",
            "answered": {"is_error": false, "result": {"result": format!("hello {client}")}},
        }),
    );
}
