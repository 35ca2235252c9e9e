//! The approval prompt as a human reads it: whatever the tool name and arguments hold, the
//! question shows no raw control, bidi or zero-width character.

use codemode_policies::{
    ApprovalRequest, Caller, MatchedBy, Risk, RiskPolicy, neutralize, summarize_args,
};
use codemode_runtime::EvalId;
use codemode_script::Preview;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Input: the tool name, a NUL byte, then the arguments (JSON if they parse, else a string).
pub fn prompt(data: &[u8]) {
    let (tool, args) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let tool = String::from_utf8_lossy(tool).into_owned();
    let args: Value = serde_json::from_slice(args)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(args).into_owned()));
    let request = ApprovalRequest {
        id: "0".repeat(32),
        tool: tool.clone(),
        args_summary: summarize_args(&args),
        args,
        profile: Some(tool.clone()),
        eval_id: EvalId(1),
        call_id: 1,
        session_id: None,
        caller: Caller::local(),
        risk: Risk::High,
        classification: codemode_policies::Class::Write,
        risk_policy: RiskPolicy::default(),
        matched: MatchedBy::Asklist(tool.clone()),
        reason: Some(tool),
        preview: Arc::new(Preview::default()),
        timeout: Duration::from_secs(60),
        call: codemode_runtime::CallContext::detached(codemode_runtime::EvalId(1), 1),
        resumed: false,
    };
    let question = request.question();
    assert_shown_safely(&question.message);
    assert_shown_safely(&request.args_summary);
    assert_shown_safely(&neutralize(&request.tool));
}

/// Line breaks are the renderer's own; nothing else invisible or cursor-moving survives.
fn assert_shown_safely(text: &str) {
    for c in text.chars() {
        let bad = c != '\n' && codemode_policies::is_invisible(c);
        assert!(!bad, "raw {c:?} in {text:?}");
    }
}
