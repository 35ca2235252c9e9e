//! Approvals "from now on" through the MCP client's elicitation, with the Python SDK
//! (clients/remember.py): offered with its period only where `rememberFor` is set; the next eval
//! makes the same call without asking (its ledger says which rule allowed it) while other
//! arguments are asked about; `codemode rules list` shows the rule the stdio server kept in the
//! state directory, and after `codemode rules revoke` the call is asked about again.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::harness::{CODEMODE, Mode, Setup, Transport, base_config};

fn rules_cli(setup: &Setup, args: &[&str]) -> (i32, String) {
    let out = Command::new(CODEMODE)
        .arg("rules")
        .args(args)
        .arg("--config")
        .arg(&setup.config)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn an_elicited_approval_from_now_on_skips_the_next_identical_ask_until_revoked() {
    let setup = Setup::new("remember", Transport::Stdio, |scratch| {
        let mut config = base_config(scratch);
        let profiles = &mut config["evaluation"]["profiles"];
        profiles["plain"] = profiles["sup"].clone();
        profiles["sup"]["riskPolicies"] = json!({"medium": {"rememberFor": "7d"}});
        // The stdio server's environment is the SDK's minimal one: the store is named here,
        // for the server and the CLI alike.
        config["durable"] = json!({"store": "local", "dir": scratch.path("state")});
        config
    });
    let obs = setup.python("remember.py", Mode::Legacy, &[]);
    let titles = |extra: &[&str]| {
        let mut t = vec![
            "Approve this call",
            "Approve this tool for the rest of this script",
            "Approve this tool for the rest of the session",
        ];
        t.extend_from_slice(extra);
        t.extend(["Decline", "Cancel"]);
        json!(t)
    };
    let remembered = titles(&["Approve this call from now on (for 7 days)"]);
    // Asked: the first call, the other arguments, the plain profile's call (no "from now on").
    assert_eq!(
        obs["offered"],
        json!([remembered, remembered, titles(&[])]),
        "{obs}"
    );
    assert_eq!(obs["asked_before_other"], 1);
    assert_eq!(
        obs["first"],
        json!([false, ["approved by the user via elicitation, from now on"]])
    );
    let (code, listed) = rules_cli(&setup, &["list"]);
    assert_eq!(code, 0, "{listed}");
    let id = listed.split_whitespace().next().unwrap().to_string();
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(
        listed.contains("caller=local profile=sup tool=everything__echo")
            && listed.contains("risk=medium")
            && listed.contains("via elicitation"),
        "{listed}"
    );
    let again = obs["again"][1][0].as_str().unwrap();
    assert_eq!(obs["again"][0], false);
    assert!(
        again.starts_with(&format!("approved by local from now on (rule {id}, until ")),
        "{again}"
    );
    // Declined (no answer left): other arguments, and the profile without rememberFor.
    assert_eq!((&obs["other"], &obs["plain"]), (&json!(true), &json!(true)));

    let (code, revoked) = rules_cli(&setup, &["revoke", &id]);
    assert_eq!(code, 0, "{revoked}");
    let after = setup.python(
        "remember.py",
        Mode::Legacy,
        &[("CODEMODE_PHASE", Path::new("after"))],
    );
    assert_eq!(after["asked"], 1, "{after}");
    assert_eq!(after["again"][0], true);
    let (_, listed) = rules_cli(&setup, &["list"]);
    assert_eq!(listed, "");
}
