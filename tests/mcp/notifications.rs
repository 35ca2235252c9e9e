//! What upstream servers say about an eval's calls — progress and log messages — reaches the
//! client of that eval, filtered by its level, and nobody else (clients/notifications.py, with
//! the upstream clients/chatty_server.py and server-everything).

use serde_json::{Value, json};

use crate::harness::{Mode, Setup, Transport, assert_json, base_config, stdio_server};
use crate::peers;

/// The base config with the upstream clients/chatty_server.py as `chatty` (its files in
/// `<scratch>/chatty`).
pub(crate) fn config(scratch: &crate::harness::Scratch) -> Value {
    let mut config = base_config(scratch);
    let chatty =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/clients/chatty_server.py");
    let mut server = stdio_server((peers::python(), vec![chatty.display().to_string()]));
    server["env"] = json!({ "CHATTY_DIR": scratch.path("chatty") });
    config["mcpServers"]["chatty"] = server;
    config
}

/// server-everything's simulated log message at `level`.
fn everything_says(level: &str) -> String {
    match level {
        "alert" => "Alert level-message".to_string(),
        _ => {
            let mut name = level.to_string();
            name[..1].make_ascii_uppercase();
            format!("{name}-level message")
        }
    }
}

/// The config with two callers, `a` and `b`, whose bearer tokens are `a-token` and `b-token`.
fn config_with_callers(scratch: &crate::harness::Scratch) -> Value {
    let mut config = config(scratch);
    let sha256 = |text: &str| codemode_policies::AuditRecord::sha256_hex(text.as_bytes());
    config["server"] = json!({"auth": {"tokens": [
        {"name": "a", "sha256": sha256("a-token")},
        {"name": "b", "sha256": sha256("b-token")},
    ]}});
    config
}

fn notifications(name: &str, transport: Transport, mode: Mode) {
    // 2025-11-25 clients are told apart by their sessions; 2026-07-28 ones, which have none, by
    // their callers.
    let callers = mode == Mode::Auto;
    let setup = Setup::new(
        name,
        transport,
        if callers { config_with_callers } else { config },
    );
    let dir = setup.scratch.path("chatty");
    std::fs::create_dir_all(&dir).expect("create the chatty dir");
    let (a, b) = (
        std::path::PathBuf::from("a-token"),
        std::path::PathBuf::from("b-token"),
    );
    let mut env = vec![("CHATTY_DIR", dir.as_path())];
    if callers {
        env.extend([("TOKEN_A", a.as_path()), ("TOKEN_B", b.as_path())]);
    }
    let obs = setup.python("notifications.py", mode, &env);
    assert_eq!(obs["protocol"], mode.protocol(), "{obs}");
    let everything = obs["heard_b_everything"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(everything.len(), 1, "{obs}");
    let level = everything[0][0].as_str().unwrap_or_default();
    assert_eq!(
        everything[0],
        json!([level, "everything", everything_says(level)]),
        "{obs}"
    );
    assert_json(
        "upstream notifications",
        &json!({
            "results": obs["results"],
            "count_progress": obs["count_progress"],
            "count_increasing": obs["count_increasing"],
            "heard_a_alone": obs["heard_a_alone"],
            "heard_a_after": obs["heard_a_after"],
            "heard_b_crowded": obs["heard_b_crowded"],
            "heard_a_prompt": obs["heard_a_prompt"],
            "prompt": obs["prompt"],
            "long_progress": obs["long_progress"],
            "long_increasing": obs["long_increasing"],
        }),
        &json!({
            "results": [{"result": "counted 3"}, {"result": "said 4"}, {"result": "a"}, {"result": "said 4"}, "toggled", "done"],
            "count_progress": ["[chatty] 1/3 step 1", "[chatty] 2/3 step 2", "[chatty] 3/3 step 3"],
            "count_increasing": true,
            "heard_a_alone": [
                ["warning", "chatty/chat", "warning message"],
                ["error", "chatty/chat", "error message"],
            ],
            "heard_a_after": [],
            "heard_b_crowded": [],
            "heard_a_prompt": [],
            "prompt": ["hello"],
            "long_progress": ["[everything] 1/2", "[everything] 2/2"],
            "long_increasing": true,
        }),
    );
}

#[test]
fn upstream_notifications_reach_their_eval_over_http() {
    notifications("notifications_http", Transport::Http, Mode::Legacy);
}

#[test]
fn upstream_notifications_reach_their_eval_on_2026_07_28() {
    notifications("notifications_modern", Transport::Http, Mode::Auto);
}
