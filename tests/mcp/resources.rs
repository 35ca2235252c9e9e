//! The upstreams' resources, resource templates and prompts through codemode, compared with
//! what server-everything answers a direct client (clients/resources.py): listed, read, got and
//! completed as the upstream answers them, named and mapped, governed by the default profile's
//! `resources` and `prompts`, audited; and read by a script with `codemode.read_resource`.

use serde_json::{Value, json};

use crate::harness::{Mode, Setup, Transport, assert_json, base_config};
use crate::peers;

fn config(scratch: &crate::harness::Scratch) -> Value {
    let mut config = base_config(scratch);
    config["evaluation"]["defaultProfile"] = json!("docs");
    config["evaluation"]["profiles"]["docs"] = json!({
        "resources": {"deny": ["everything__demo://resource/static/document/extension.md"]},
        "prompts": {"deny": ["everything__simple-*"]},
    });
    // Red-team finding: masking what a read must carry was codemode's own internal error,
    // audited as ok.
    config["outputs"] = json!([{
        "tools": ["everything__demo://resource/static/document/startup.md"],
        "mask": ["/contents"],
    }]);
    config
}

fn resources(name: &str, mode: Mode) {
    let setup = Setup::new(name, Transport::Http, config);
    let (everything, _) = peers::everything_server_cmd();
    let obs = setup.python("resources.py", mode, &[("EVERYTHING_BIN", &everything)]);
    assert_json("through codemode", &obs["got"], &obs["expected"]);
    // server-everything's own numbers, so that an empty listing cannot pass.
    assert_json(
        "server-everything's own counts",
        &json!({"counts": obs["counts"], "hidden_listed": obs["hidden_listed"]}),
        &json!({"counts": {"resources": 7, "templates": 2, "prompts": 4}, "hidden_listed": false}),
    );
    assert_json("a script's read", &obs["script"], &obs["script_expected"]);
    assert_json(
        "refused",
        &json!({"refused": obs["refused"], "script_hidden": obs["script_hidden"]}),
        &json!({
            "refused": {
                "hidden_read": "no resource `codemode://everything/demo://resource/static/document/extension.md`",
                "hidden_prompt": "no prompt `everything__simple-prompt`",
                "unmapped": "`demo://resource/static/document/architecture.md` is not a resource of codemode: its resources are `codemode://<server>/<the upstream's URI>` (see resources/list)",
                "other_server": "resources/read: there is no upstream server `nosuch`",
                "masked_away": "the `outputs` rules for `everything__demo://resource/static/document/startup.md` remove what a resource read must carry (/contents)",
                "unknown_complete": {"completion": {"values": []}},
            },
            "script_hidden": ["ToolCallDeniedError",
                "the profile's `resources` do not let `everything__demo://resource/static/document/extension.md` through"],
        }),
    );
    let access: Vec<Value> = setup
        .audit_once(&[("eval", 2), ("access", 8)])
        .into_iter()
        .filter(|r| r["event"] == "access")
        .map(|r| {
            json!([
                r["method"],
                r["name"],
                r["decision"],
                r["status"],
                r["profile"]
            ])
        })
        .collect();
    let doc = "everything__demo://resource/static/document/architecture.md";
    assert_eq!(
        access,
        vec![
            json!(["resources/read", doc, "allowed", "ok", "docs"]),
            json!([
                "resources/read",
                "everything__demo://resource/dynamic/text/1",
                "allowed",
                "ok",
                "docs"
            ]),
            json!([
                "prompts/get",
                "everything__args-prompt",
                "allowed",
                "ok",
                "docs"
            ]),
            json!([
                "resources/read",
                "everything__demo://resource/static/document/extension.md",
                "denied",
                "denied",
                "docs"
            ]),
            json!([
                "prompts/get",
                "everything__simple-prompt",
                "denied",
                "denied",
                "docs"
            ]),
            json!([
                "resources/read",
                "demo://resource/static/document/architecture.md",
                "denied",
                "denied",
                "docs"
            ]),
            json!([
                "resources/read",
                "nosuch__demo://resource/static/document/architecture.md",
                "allowed",
                "error",
                "docs"
            ]),
            json!([
                "resources/read",
                "everything__demo://resource/static/document/startup.md",
                "denied",
                "denied",
                "docs"
            ]),
        ],
    );
}

#[test]
fn upstream_resources_and_prompts_pass_through_on_2025_11_25() {
    resources("resources_legacy", Mode::Legacy);
}

#[test]
fn upstream_resources_and_prompts_pass_through_on_2026_07_28() {
    resources("resources_modern", Mode::Auto);
}
