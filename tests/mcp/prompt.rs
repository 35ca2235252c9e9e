//! The approval prompt a human can judge (clients/prompt.py): a multi-line argument is a
//! framed block in the MCP client's elicitation text — every line of it after `    │ `, so no
//! value can fake a line of the prompt — and the eval's result says who approved each call and
//! through which channel, in its text and its structured content.

use serde_json::json;

use crate::harness::{Mode, Setup, Transport, base_config, stdio_server};
use crate::peers;

#[test]
fn prompts_frame_text_and_results_say_who_approved() {
    let setup = Setup::new("prompt_blocks", Transport::Stdio, base_config);
    let obs = setup.python("prompt.py", Mode::Auto, &[]);
    assert_eq!(
        obs["asked"][0],
        "A script of caller `local` wants to call `everything__echo` (profile `sup`, asklist \
         glob `everything__echo`).\nRisk: medium\nClass: read\n\nArguments:\n{\n  \"message\": (text: 3 lines, \
         36 characters)\n    │ first line\n    │   \"fake\": \"approved\"\n    │ last\n}\n\nThe \
         script's tool calls:\n  line 2: everything__echo\n\nNo answer within 2 s denies the call."
    );
    // Who approved, in the text and the structured content.
    assert_eq!(
        obs["once"][1],
        "Result:\n\"Echo: first line\\n  \\\"fake\\\": \\\"approved\\\"\\nlast\"\n\nTool calls:\n#1 \
         everything__echo ok (approved by the user via elicitation)"
    );
    assert_eq!(
        obs["session"][1],
        "Result:\n[\"Echo: a\",\"Echo: b\"]\n\nTool calls:\n#1 everything__echo ok (approved by \
         the user via elicitation, for this session)\n#2 everything__echo ok (approved by an \
         earlier answer for this eval or session)"
    );
    let notes: Vec<&serde_json::Value> = obs["session"][2]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["note"])
        .collect();
    assert_eq!(
        json!(notes),
        json!([
            "approved by the user via elicitation, for this session",
            "approved by an earlier answer for this eval or session"
        ])
    );
    assert_eq!(obs["once"][0], false);
    assert_eq!(obs["session"][0], false);
}

/// `approvalDiffs`: the prompt of a write shows the change against the file's current content,
/// read through the same server before the human is asked; a file that does not exist yet gets
/// a line saying why there is no diff.
#[test]
fn a_write_is_shown_as_a_diff() {
    let setup = Setup::new("prompt_diff", Transport::Stdio, |scratch| {
        let files = scratch.path("files");
        std::fs::create_dir_all(&files).unwrap();
        std::fs::write(files.join("notes.txt"), "one\ntwo \u{1b}[2K\nthree\n").unwrap();
        json!({
            "mcpServers": {"fs": stdio_server(peers::filesystem_server_cmd(&files))},
            "evaluation": {"profiles": {"writer": {
                "asklist": ["fs__write_file"],
                "approvalDiffs": {"fs__write_file": {
                    "read": "fs__read_text_file", "path": "path", "content": "content"}}
            }}}
        })
    });
    let obs = setup.python("prompt_diff.py", Mode::Auto, &[]);
    assert_eq!(obs["result"], json!([false, "written"]));
    assert_eq!(obs["notes"], "one\nTWO\nthree\n");
    let asked = |i: usize| obs["asked"][i].as_str().unwrap_or_default().to_string();
    let first = asked(0);
    assert!(
        first.contains(
            "\"content\": (text: 3 lines, 14 characters)\n    │ one\n    │ TWO\n    │ three\n  \"path\": "
        ),
        "{first}"
    );
    assert!(
        first.contains(
            "notes.txt\"\n}\n\nChanges to the current content (3 lines → 3 lines):\n    ┆ @@ -1,3 +1,3 @@\n    │ one\n    │-two \\u001b[2K\n    │+TWO\n    │ three\n\nThe script's tool calls:"
        ),
        "{first}"
    );
    let second = asked(1);
    assert!(
        second.contains("\n\nNo diff: reading the current content failed (a new file?): "),
        "{second}"
    );
}
