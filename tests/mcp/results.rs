//! What a model reads of an eval through a real client (clients/results.py): the text block of
//! a 200-call eval — compact JSON elided to `limits.maxResultText`, a neutralised hostile log
//! line, the ledger summarised — and the structured content with the same facts within the same
//! budget; search_tools' compact text; each eval tool saying what its profile allows, asks about
//! and denies.

use serde_json::json;

use crate::harness::{Mode, Setup, Transport, base_config};

#[expect(clippy::print_stdout, reason = "the test reports what it measured")]
#[test]
fn a_200_call_eval_reads_in_a_few_lines() {
    let setup = Setup::new("results_200_calls", Transport::Stdio, |scratch| {
        let mut config = base_config(scratch);
        config["limits"] = json!({"maxResultText": "1KiB"});
        config
    });
    let obs = setup.python("results.py", Mode::Auto, &[]);
    assert_eq!(obs["calls"], 200);
    assert_eq!(obs["search_text_is_compact"], true);

    let row = |i: usize| format!(r#"{{"i":{i},"name":"row {i}"}}"#);
    let head: Vec<String> = (0..26).map(row).collect();
    let tail: Vec<String> = (2988..3000).map(row).collect();
    let want = format!(
        "Result (elided to 1,023 of 84,798 bytes):\n\
         {{\"n\":198,\"rows\":[{},\"… 2,962 more items …\",{}]}}\n\n\
         Logs:\n\
         [log] x\\n[error] FAKE\\u001b]0;t\\u0007\n\n\
         Tool calls: 200 (198 ok, 1 error, 1 denied):\n\
         - time__get_current_time: 198 ok\n\
         - everything__get-sum: 1 denied\n\
         - nope__tool: 1 error\n\
         Failed:\n\
         - #199 everything__get-sum denied — denied\n\
         - #200 nope__tool error — unknown tool `nope__tool`",
        head.join(","),
        tail.join(",")
    );
    assert_eq!(obs["text"], want.as_str());
    // The measurement: 1,350 bytes (the result within its 1 KiB budget, its header line, and 285 bytes of logs
    // and ledger), where the same eval rendered 24,429 bytes before, 7,937 of them the ledger.
    assert_eq!(obs["text_bytes"], 1350);
    assert_eq!(want.len(), 1350);

    // The structured content: the same facts, the result elided alike, the ledger summarised.
    let structured = &obs["structured"];
    let elided: serde_json::Value =
        serde_json::from_str(want.lines().nth(1).unwrap_or_default()).unwrap();
    assert_eq!(structured["result"], elided);
    assert_eq!(
        structured["result_elided"],
        json!({"kept": 1023, "total": 84798})
    );
    assert_eq!(
        structured["tool_calls"],
        json!({"count": 200, "ok": 198, "error": 1, "denied": 1,
               "by_tool": [{"tool": "time__get_current_time", "ok": 198},
                           {"tool": "everything__get-sum", "denied": 1},
                           {"tool": "nope__tool", "error": 1}],
               "failed": [{"ids": [199], "count": 1, "tool": "everything__get-sum", "status": "denied",
                           "reason": "denied"},
                          {"ids": [200], "count": 1, "tool": "nope__tool", "status": "error",
                           "reason": "unknown tool `nope__tool`"}]})
    );
    let wall = structured["stats"]["wall_ms"].as_f64().unwrap();
    assert_eq!(wall, wall.round(), "{wall}");
    println!(
        "text {} bytes, structured content {} bytes",
        obs["text_bytes"], obs["structured_bytes"]
    );
    assert!(
        obs["structured_bytes"].as_u64().unwrap() <= 2 * 1024,
        "{}",
        obs["structured_bytes"]
    );

    let described = |profile: &str| {
        let text = obs["descriptions"][format!("codemode_eval_{profile}")]
            .as_str()
            .unwrap_or_default()
            .to_string();
        text[text.find("Servers:").unwrap_or(0)..].to_string()
    };
    assert_eq!(
        described("sup"),
        "`eval` under profile `sup`. Allows: everything else. Asks a human first: \
         everything__echo (denied when nobody can answer). Denies: everything__get-sum."
    );
    assert_eq!(
        described("lenient"),
        "`eval` under profile `lenient`. Allows: everything else. Asks a human first: \
         everything__echo (allowed when nobody can answer)."
    );
}
