//! Hot reload of the config file under a connected client (clients/reload.py), and that one
//! change causes one reload (clients/reload_quiet.py).

use serde_json::{Value, json};

use crate::harness::{
    Mode, Setup, Transport, assert_json, base_config, eval_summary, stdio_server,
};
use crate::peers;

const BEFORE: [&str; 5] = [
    "codemode_eval_lenient",
    "codemode_eval_sup",
    "eval",
    "get_tools",
    "search_tools",
];
const WITH_EXTRA: [&str; 6] = [
    "codemode_eval_extra",
    "codemode_eval_lenient",
    "codemode_eval_sup",
    "eval",
    "get_tools",
    "search_tools",
];

/// Writes the three versions the client installs in turn: V2 (adds the server `fs` and the
/// profile `extra`), BAD (invalid, and without `fs`), V1 (the original).
fn versions(setup: &Setup) -> [(&'static str, std::path::PathBuf); 3] {
    let v1 = base_config(&setup.scratch);
    let mut v2 = v1.clone();
    v2["mcpServers"]["fs"] =
        stdio_server(peers::filesystem_server_cmd(&setup.scratch.path("files")));
    v2["evaluation"]["profiles"]["extra"] = json!({ "allowlist": ["fs__*"] });
    let mut bad = v1.clone();
    bad["evaluation"]["profiles"]["broken"] = json!({ "allowlist": "fs__*" });
    [
        ("CODEMODE_CONFIG_V1", setup.config_version("v1.json", &v1)),
        ("CODEMODE_CONFIG_V2", setup.config_version("v2.json", &v2)),
        (
            "CODEMODE_CONFIG_BAD",
            setup.config_version("bad.json", &bad),
        ),
    ]
}

fn hot_reload(transport: Transport, mode: Mode) {
    let name = format!("hot_reload_{transport:?}_{mode:?}").to_lowercase();
    let setup = Setup::new(&name, transport, base_config);
    let files = versions(&setup);
    let env: Vec<(&str, &std::path::Path)> = files.iter().map(|(k, p)| (*k, p.as_path())).collect();
    let obs = setup.python("reload.py", mode, &env);
    assert_eq!(obs["protocol"], mode.protocol());

    let servers = |step: &str| {
        obs[step]["servers"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(obs["before"]["tools"], json!(BEFORE));
    assert!(!servers("before").contains("fs ("), "{}", servers("before"));

    // V2: the new profile's eval tool and the new server's tools, usable under the profile.
    assert_eq!(obs["v2"]["tools"], json!(WITH_EXTRA), "{}", obs["v2"]);
    assert!(servers("v2").contains("fs ("), "{}", servers("v2"));
    let uses_fs = |step: &str| {
        let mut summary = eval_summary(&obs[step]);
        let listing = summary["result"]["listing"]["content"].take();
        assert!(
            listing
                .as_str()
                .is_some_and(|l| l.contains("[FILE] hello.txt")),
            "{step}: fs__list_directory under the new profile: {}",
            obs[step]
        );
        summary
    };
    let fs_eval = json!({"is_error": false, "ok": true,
        "result": {"listing": {"content": null}, "time": "denied"},
        "calls": [["fs__list_directory", "ok", null], ["time__get_current_time", "denied", "denied"]]});
    assert_json(&format!("{name}: v2 eval"), &uses_fs("v2_eval"), &fs_eval);
    // At least one: the reload notifies once, and the pool's change (the new server) may add
    // one more or be merged into it, depending on timing.
    assert!(
        obs["notified_after_v2"].as_u64().is_some_and(|n| n >= 1),
        "clients are told the tools changed: {}",
        obs["notified_after_v2"]
    );

    // BAD: rejected once (the server logged it); the running config (tools, server, profile)
    // stays and keeps serving.
    assert_eq!(obs["rejected"], 1);
    assert_eq!(obs["bad"]["tools"], json!(WITH_EXTRA));
    assert_eq!(servers("bad"), servers("v2"));
    assert_json(
        &format!("{name}: eval after the invalid edit"),
        &uses_fs("bad_eval"),
        &fs_eval,
    );

    // V1 again: the watcher still follows the file.
    assert_eq!(obs["v1"]["tools"], json!(BEFORE), "{}", obs["v1"]);
    assert!(!servers("v1").contains("fs ("), "{}", servers("v1"));
    assert_json(
        &format!("{name}: eval after v1"),
        &eval_summary(&obs["v1_eval"]),
        &json!({"is_error": false, "ok": true, "result": "ok",
            "calls": [["time__get_current_time", "ok", null]]}),
    );
}

#[test]
fn hot_reload_stdio_auto() {
    hot_reload(Transport::Stdio, Mode::Auto);
}

#[test]
fn hot_reload_stdio_legacy() {
    hot_reload(Transport::Stdio, Mode::Legacy);
}

#[test]
fn hot_reload_http_auto() {
    hot_reload(Transport::Http, Mode::Auto);
}

#[test]
fn hot_reload_http_legacy() {
    hot_reload(Transport::Http, Mode::Legacy);
}

#[test]
fn hot_reload_happens_once_per_change() {
    let setup = Setup::new("hot_reload_once", Transport::Stdio, base_config);
    let mut v2: Value = base_config(&setup.scratch);
    v2["evaluation"]["profiles"]["extra"] = json!({ "allowlist": ["time__*"] });
    let v2 = setup.config_version("v2.json", &v2);
    let obs = setup.python(
        "reload_quiet.py",
        Mode::Legacy,
        &[("CODEMODE_CONFIG_V2", &v2)],
    );
    // The change adds a profile only (the servers stay as they are): one reload, one
    // notification.
    assert_eq!(obs["notified_before_quiet"], 1, "{obs}");
    assert_eq!(obs["notified_while_quiet"], 0, "{obs}");
}
