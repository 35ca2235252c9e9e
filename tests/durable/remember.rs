//! Approvals "from now on" (`riskPolicies.<level>.rememberFor`) across two processes sharing
//! one store (a local store directory, or one real Redis server): the rule one node records applies on the other; other arguments
//! are still asked about; a revocation through the approval API or `codemode rules revoke`
//! makes every node ask again; a level without `rememberFor` does not offer the answer; the
//! audit logs record each rule's creation, use and revocation; and a reload that points a
//! server's or a command tool's name at another command ends the rules given for it.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use codemode_test_support::services::RedisServer;

use crate::client::{self, block_on, input_keys, request_state};
use crate::harness::{
    ASKED_TOOL, CODEMODE, KEY, KEY_ENV, Node, audit_records, await_some, node_config, write_json,
};

const GATE: &str = "codemode_eval_gate";
const PLAIN: &str = "codemode_eval_plain";
const FROM_NOW_ON: &str = "Approve this call from now on (for 1 hour)";

/// `inputResponses` giving `decision` to every question of an input-required result.
fn answer_all(result: &Value, decision: &str) -> Value {
    Value::Object(
        input_keys(result)
            .into_iter()
            .map(|k| {
                let answer = json!({"action": "accept", "content": {"decision": decision}});
                (k, answer)
            })
            .collect(),
    )
}

/// Writes `content` to `file` through `tool` at `node`: the result when nobody was asked, else
/// the input-required result, answered with `answer` when given (the answered result returned).
fn write(node: &Node, tool: &str, file: &Path, content: &str, answer: Option<&str>) -> Value {
    let code = format!(
        "await codemode.fs__write_file({{path: {}, content: {}}}); return 'written';",
        json!(file.display().to_string()),
        json!(content)
    );
    run(node, tool, &code, answer)
}

/// Runs `code` through the eval tool `tool` at `node`: the result when nobody was asked, else
/// the input-required result, answered with `answer` when given (the answered result returned).
fn run(node: &Node, tool: &str, code: &str, answer: Option<&str>) -> Value {
    let args = json!({"code": code});
    let first = block_on(client::call_tool(&node.mcp_url(), tool, &args, None))
        .unwrap_or_else(|e| panic!("{e}\n{}", node.log()))
        .result;
    let Some(decision) = answer else {
        return first;
    };
    let retry = Some((request_state(&first), answer_all(&first, decision)));
    let retry = retry.as_ref().map(|(s, r)| (s.as_str(), r.clone()));
    block_on(client::call_tool(&node.mcp_url(), tool, &args, retry))
        .unwrap()
        .result
}

fn result_of(reply: &Value) -> &Value {
    &reply["structuredContent"]["result"]
}

/// `codemode rules ARGS --config CONFIG` with the cluster's sealing key: exit code and stdout.
fn rules_cli(args: &[&str], config: &Path) -> (i32, String) {
    let out = Command::new(CODEMODE)
        .args(["rules"])
        .args(args)
        .arg("--config")
        .arg(config)
        .env_remove("CODEMODE_CONFIG")
        .env(KEY_ENV, KEY)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some(), "{stderr}");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// `GET` or `DELETE` on the approval API, as the listener's own origin: status and body.
fn api(method: reqwest::Method, base: &str, path: &str) -> (u16, Value) {
    block_on(async {
        let response = reqwest::Client::new()
            .request(method, format!("{base}{path}"))
            .header("content-type", "application/json")
            .header("origin", base)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    })
}

#[test]
fn an_approval_from_now_on_is_a_rule_every_node_applies_until_revoked() {
    let dir = codemode_test_support::scratch_dir("durable", "remember");
    let durable =
        json!({"store": "local", "dir": dir.join("state"), "suspendToStoreAfterSeconds": 3600});
    a_rule_applies_on_both_nodes_until_revoked(&dir, durable);
}

#[test]
fn on_one_redis_server_a_rule_of_one_node_applies_on_the_other_until_revoked() {
    let dir = codemode_test_support::scratch_dir("durable", "remember_redis");
    let redis = RedisServer::start(&dir.join("redis"));
    let durable =
        json!({"store": redis.url(0), "keyEnv": KEY_ENV, "suspendToStoreAfterSeconds": 3600});
    a_rule_applies_on_both_nodes_until_revoked(&dir, durable);
}

/// Two nodes sharing the store `durable`, in the scratch directory `dir`: a rule recorded on
/// one applies on the other, and a revocation on either stops it on both.
fn a_rule_applies_on_both_nodes_until_revoked(dir: &Path, durable: Value) {
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let configs: Vec<_> = ["a", "b"]
        .iter()
        .map(|name| {
            let mut value =
                node_config(&files, &dir.join(format!("audit-{name}")), durable.clone());
            let profiles = &mut value["evaluation"]["profiles"];
            profiles["plain"] = profiles["gate"].clone();
            profiles["gate"]["riskPolicies"] = json!({"medium": {"rememberFor": "1h"}});
            let config = dir.join(format!("{name}.json"));
            write_json(&config, &value);
            config
        })
        .collect();
    let a = Node::start("a", &configs[0], &[(KEY_ENV, KEY)]);
    let b = Node::start("b", &configs[1], &[(KEY_ENV, KEY)]);
    let file = files.join("ledger.txt");
    let logs = || format!("{}\n{}", a.log(), b.log());

    // Asked on a, with the answer offered and labelled with its period; answered "from now on".
    let asked = write(&a, GATE, &file, "one", None);
    assert!(asked.to_string().contains(FROM_NOW_ON), "{asked}");
    let done = write(&a, GATE, &file, "one", Some("approve_remember"));
    assert_eq!(result_of(&done), "written", "{done}\n{}", logs());

    // b applies the rule: the same call runs without asking.
    let again = write(&b, GATE, &file, "one", None);
    assert_eq!(result_of(&again), "written", "{again}\n{}", logs());
    // Other arguments are asked about (and declined here).
    let other = write(&b, GATE, &file, "two", None);
    assert_eq!(other["resultType"], "input_required", "{other}");
    write(&b, GATE, &file, "two", Some("decline"));
    // A level without rememberFor does not offer it.
    let plain = write(&a, PLAIN, &file, "one", None);
    assert_eq!(plain["resultType"], "input_required", "{plain}");
    assert!(!plain.to_string().contains("approve_remember"), "{plain}");
    write(&a, PLAIN, &file, "one", Some("decline"));

    // Listed by the API of either node and by the CLI.
    let (status, listed) = api(reqwest::Method::GET, &b.base_url(), "/approvals/rules");
    assert_eq!(status, 200, "{listed}");
    let rules = listed["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 1, "{listed}");
    let id = rules[0]["id"].as_str().unwrap().to_string();
    assert_eq!(
        (
            &rules[0]["tool"],
            &rules[0]["profile"],
            &rules[0]["risk"],
            &rules[0]["channel"]
        ),
        (
            &json!("fs__write_file"),
            &json!("gate"),
            &json!("medium"),
            &json!("elicitation")
        )
    );
    let (code, out) = rules_cli(&["list"], &configs[0]);
    assert_eq!(code, 0);
    assert!(out.starts_with(&format!("{id}  caller=")), "{out}");
    assert!(
        out.contains("tool=fs__write_file") && out.lines().count() == 1,
        "{out}"
    );

    // Revoked through a's API: b asks again.
    let (status, body) = api(
        reqwest::Method::DELETE,
        &a.base_url(),
        &format!("/approvals/rules/{id}"),
    );
    assert_eq!((status, body), (200, json!({"status": "revoked"})));
    let (status, _) = api(
        reqwest::Method::DELETE,
        &a.base_url(),
        &format!("/approvals/rules/{id}"),
    );
    assert_eq!(status, 404);
    let asked = write(&b, GATE, &file, "one", None);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let done = write(&b, GATE, &file, "one", Some("approve_remember"));
    assert_eq!(result_of(&done), "written", "{done}\n{}", logs());

    // Revoked by the CLI: a asks again.
    let (code, out) = rules_cli(&["revoke", &id], &configs[1]);
    assert_eq!(
        (code, out.starts_with(&format!("revoked {id}"))),
        (0, true),
        "{out}"
    );
    assert_eq!(rules_cli(&["revoke", &id], &configs[1]).0, 1);
    let asked = write(&a, GATE, &file, "one", None);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    write(&a, GATE, &file, "one", Some("decline"));

    // The audit logs: each creation and revocation, and the call the rule allowed.
    let rule_events = |audit: &str| -> Vec<Value> {
        await_some("two rule records", || {
            let events: Vec<Value> = audit_records(&dir.join(audit))
                .into_iter()
                .filter(|r| r["event"] == "rule")
                .map(|r| json!([r["action"], r["rule_id"], r["channel"]]))
                .collect();
            (events.len() == 2).then_some(events)
        })
    };
    assert_eq!(
        rule_events("audit-a"),
        [
            json!(["created", id, "elicitation"]),
            json!(["revoked", id, "http"])
        ]
    );
    assert_eq!(
        rule_events("audit-b"),
        [
            json!(["created", id, "elicitation"]),
            json!(["revoked", id, "cli"])
        ]
    );
    let allowed: Vec<Value> = audit_records(&dir.join("audit-b"))
        .into_iter()
        .filter(|r| r["event"] == "tool_call" && r["channel"] == "policy")
        .collect();
    assert_eq!(allowed.len(), 1, "{allowed:?}");
    assert_eq!(allowed[0]["decision"], "approved");
    let reason = allowed[0]["decision_reason"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!(
            "remembered rule {id} (approved via elicitation, until "
        )),
        "{reason}"
    );
}

/// The call of the command tool `stamp` the reload test approves.
const STAMP: &str = "return await codemode.stamp({text: 'hi'});";

/// The command tool the reload test approves "from now on": `echo` of its one argument.
fn stamp(args: &[&str]) -> Value {
    json!({
        "command": "echo",
        "args": args,
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                        "required": ["text"]}
    })
}

/// Writes `one` to `file` and calls `stamp` at `node`, each approved "from now on"; then makes
/// both calls again, which run without asking.
fn approve_both_from_now_on(node: &Node, file: &Path) {
    write(node, GATE, file, "one", Some("approve_remember"));
    run(node, GATE, STAMP, Some("approve_remember"));
    let again = write(node, GATE, file, "one", None);
    assert_eq!(result_of(&again), "written", "{again}\n{}", node.log());
    let stamped = run(node, GATE, STAMP, None);
    assert_eq!(stamped["isError"], false, "{stamped}\n{}", node.log());
}

/// A rule covers calls only to the upstream it was given for: a hot reload that changes the
/// `fs` server's arguments (another process behind the same name) or the command tool
/// `stamp`'s argv makes the same calls ask again, though caller, profile, tool and arguments
/// are unchanged; approving them "from now on" again records rules for the new upstreams.
#[test]
fn a_reload_that_changes_an_upstreams_command_ends_its_rules() {
    let dir = codemode_test_support::scratch_dir("durable", "remember_reload");
    let (files, more) = (dir.join("files"), dir.join("more"));
    for d in [&files, &more] {
        std::fs::create_dir_all(d).unwrap();
    }
    let durable = json!({"store": "local", "dir": dir.join("state")});
    let mut value = node_config(&files, &dir.join("audit"), durable);
    value["commands"]["stamp"] = stamp(&["{text}"]);
    value["evaluation"]["profiles"]["gate"]["asklist"] = json!([ASKED_TOOL, "stamp"]);
    value["evaluation"]["profiles"]["gate"]["riskPolicies"] =
        json!({"medium": {"rememberFor": "1h"}});
    let config = dir.join("node.json");
    write_json(&config, &value);
    let node = Node::start("reload", &config, &[]);
    let file = files.join("ledger.txt");

    // Both calls approved from now on, then made again without asking.
    approve_both_from_now_on(&node, &file);

    // The reload: `fs` gets one more allowed directory, `stamp` one more fixed argument, and
    // the profile `after`, whose eval tool answering says the new config is in force.
    let mut args = value["mcpServers"]["fs"]["args"]
        .as_array()
        .unwrap()
        .clone();
    args.push(json!(more.display().to_string()));
    value["mcpServers"]["fs"]["args"] = json!(args);
    value["commands"]["stamp"] = stamp(&["-n", "{text}"]);
    value["evaluation"]["profiles"]["after"] = json!({});
    write_json(&config, &value);
    await_some("the reloaded config in force", || {
        let reply = block_on(client::call_tool(
            &node.mcp_url(),
            "codemode_eval_after",
            &json!({"code": "return 1;"}),
            None,
        ))
        .ok()?;
        (reply.result["structuredContent"]["result"] == 1).then_some(())
    });

    for (what, asked) in [
        ("fs", write(&node, GATE, &file, "one", None)),
        ("stamp", run(&node, GATE, STAMP, None)),
    ] {
        assert_eq!(
            asked["resultType"],
            "input_required",
            "{what}: {asked}\n{}",
            node.log()
        );
    }
    // Approved from now on for the new upstreams: covered again.
    approve_both_from_now_on(&node, &file);
    let (status, listed) = api(reqwest::Method::GET, &node.base_url(), "/approvals/rules");
    assert_eq!(
        (status, listed["rules"].as_array().map(Vec::len)),
        (200, Some(2)),
        "{listed}"
    );
}
