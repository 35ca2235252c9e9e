//! What a model reads of an eval through a real client (clients/results.py): the text block of
//! a 200-call eval — compact JSON elided to `limits.maxResultText`, a neutralised hostile log
//! line, the ledger summarised — while the structured content keeps everything; search_tools'
//! compact text; each eval tool saying what its profile allows, asks about and denies.

use serde_json::json;

use crate::harness::{Mode, Setup, Transport, base_config};

#[test]
fn a_200_call_eval_reads_in_a_few_lines() {
    let setup = Setup::new("results_200_calls", Transport::Stdio, |scratch| {
        let mut config = base_config(scratch);
        config["limits"] = json!({"maxResultText": "1KiB"});
        config
    });
    let obs = setup.python("results.py", Mode::Auto, &[]);
    assert_eq!(obs["calls"], 200);
    assert_eq!(
        obs["rows"], 3000,
        "the structured content keeps the whole result"
    );
    assert_eq!(obs["search_text_is_compact"], true);

    let row = |i: usize| format!(r#"{{"i":{i},"name":"row {i}"}}"#);
    let head: Vec<String> = (0..26).map(row).collect();
    let tail: Vec<String> = (2988..3000).map(row).collect();
    let want = format!(
        "Result (elided to 1,023 of 84,798 bytes; the structured content has all of it):\n\
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
    // The measurement: 1,388 bytes (the result within its 1 KiB budget, its header line, and 285 bytes of logs
    // and ledger), where the same eval rendered 24,429 bytes before, 7,937 of them the ledger.
    assert_eq!(obs["text_bytes"], 1388);
    assert_eq!(want.len(), 1388);

    let described = |profile: &str| {
        let text = obs["descriptions"][format!("codemode_eval_{profile}")]
            .as_str()
            .unwrap_or_default()
            .to_string();
        text[text.find("Servers:").unwrap_or(0)..].to_string()
    };
    assert_eq!(
        described("sup"),
        "Servers: everything (14 tools), time (2 tools). Runs under the `sup` profile. \
         Allows: everything else. Asks a human first: everything__echo (denied when nobody can \
         answer). Denies: everything__get-sum."
    );
    assert_eq!(
        described("lenient"),
        "Servers: everything (14 tools), time (2 tools). Runs under the `lenient` profile. \
         Allows: everything else. Asks a human first: everything__echo (allowed when nobody can \
         answer)."
    );
}
