//! The audit records: one per tool-call attempt, one per eval.

use codemode_runtime::{CallStatus, ErrorKind, EvalId, EvalOutcome};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use super::decision::{Decision, Stage};
pub use super::sampling::SamplingAuditRecord;
use super::time::now_rfc3339;
use crate::{Channel, DispositionKind, Risk};

/// One line of the audit log. Serialised with an `event` field: `"tool_call"`, `"eval"`,
/// `"access"`, `"sampling"` or `"rule"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[expect(
    clippy::large_enum_variant,
    reason = "a record is built, written and dropped one at a time; none are kept in bulk"
)]
pub enum AuditRecord {
    /// A tool-call attempt (allowed, denied, approved, declined, timed out, failed…).
    ToolCall(ToolCallAuditRecord),
    /// A finished eval.
    Eval(EvalAuditRecord),
    /// A client's read of an upstream resource, or get of an upstream prompt, through codemode.
    Access(AccessAuditRecord),
    /// An upstream's request to sample the client's model during a script's call.
    Sampling(SamplingAuditRecord),
    /// A remembered approval created or revoked.
    Rule(super::rule::RuleAuditRecord),
}

impl AuditRecord {
    /// The record's `ts`.
    pub fn ts(&self) -> &str {
        match self {
            AuditRecord::ToolCall(r) => &r.ts,
            AuditRecord::Eval(r) => &r.ts,
            AuditRecord::Access(r) => &r.ts,
            AuditRecord::Sampling(r) => &r.ts,
            AuditRecord::Rule(r) => &r.ts,
        }
    }
}

/// `event: "tool_call"`: one attempt to call a tool, whatever became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallAuditRecord {
    /// When the attempt ended, RFC 3339 UTC.
    pub ts: String,
    /// The eval ([`AuditRecord::eval_id`]); logs written before ids were strings
    /// hold a number, read as its decimal text.
    #[serde(deserialize_with = "eval_id_text")]
    pub eval_id: String,
    /// The call's number within the eval.
    pub call_id: u64,
    /// The client session; `null` outside MCP.
    pub session_id: Option<String>,
    /// The profile in force; `null` when unprofiled.
    pub profile: Option<String>,
    /// The name called.
    pub tool: String,
    /// Hex SHA-256 of the arguments' canonical JSON ([`AuditRecord::canonical_json`]).
    pub args_sha256: String,
    /// The arguments, only with `audit.includeArgs`; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// What the profile said.
    pub disposition: DispositionKind,
    /// What became of it.
    pub decision: Decision,
    /// For a call the policy refused, the machine-readable reason (`denied`,
    /// `elicitation_declined`, `elicitation_timeout`, `elicitation_unsupported`; `unknown_tool`
    /// for a call to a tool that does not exist, whose `decision` is `denied`); otherwise
    /// the deciding rule's reason, if any; for arguments that fail the tool's `inputSchema`,
    /// `invalid_arguments: ` and each failing path (the given values left out unless
    /// `includeArgs`). Tool error messages are not logged.
    pub reason: Option<String>,
    /// How the call ended.
    pub status: CallStatus,
    /// From the start of the attempt (approval time included) to its end, in milliseconds.
    pub duration_ms: f64,
    /// Who the eval runs for ([`crate::Caller::name`]: `local`, a token's name, a JWT's `sub`).
    #[serde(default)]
    pub caller: String,
    /// The call's risk level ([`crate::Disposition::risk`]).
    #[serde(default)]
    pub risk: Risk,
    /// Where the decision on an ask came from: a human's channel (`elicitation`, `http`,
    /// `terminal`), `fallback` (nobody could be asked), `policy` (an approval remembered for
    /// the eval or session, a timeout); `null` when nobody was asked.
    #[serde(default)]
    pub channel: Option<Channel>,
    /// Who answered the ask, when the channel names them (an HTTP token's name, `local`).
    #[serde(default)]
    pub decided_by: Option<String>,
    /// The reason the human gave with the answer, if any (or why a refused answer did not
    /// take effect).
    #[serde(default)]
    pub decision_reason: Option<String>,
    /// The concrete paths of the result that the `outputs` policy masked or removed (JSON
    /// Pointers, in document order); empty when none.
    #[serde(default)]
    pub redacted_paths: Vec<String>,
    /// Hex SHA-256 of the result as the tool returned it, before any masking (of its
    /// canonical JSON, like `args_sha256`); `null` when the call returned no result.
    #[serde(default)]
    pub output_sha256: Option<String>,
    /// Where the call's fate was decided ([`Stage`]); absent in records written before it was
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    /// The tool's class (`read`, `write`, `destructive`: [`crate::Class`]) as the call was
    /// decided; absent in records written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classification: Option<crate::Class>,
    /// The permission by which the decider of an approved ask held the right to decide it: one
    /// of the risk level's `approvers` (`riskPolicies.<level>.approvers`); absent when the level
    /// names no approvers or nobody approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver_right: Option<String>,
    /// The caller's permissions as the call was decided, sorted (without `allow_destructive`
    /// for the local caller under `localAllowDestructive: false`); empty in records written
    /// before it was recorded.
    #[serde(default)]
    pub caller_permissions: Vec<String>,
    /// How long the human had, in seconds: for a call put to a human, its approval timeout
    /// (the risk policy's, else the profile's); else, for a `hitl_request` a human was asked,
    /// its question's `timeoutMs`. Absent when nobody was asked. Whole seconds are written as
    /// integers.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "seconds_text"
    )]
    pub timeout_seconds: Option<f64>,
    /// The id of the approval request this call joined instead of prompting again: an
    /// identical call (same caller, profile, tool and arguments) was waiting for a human, and
    /// its answer decided this call too. Absent for a call that asked, or was not asked about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joined_ask: Option<String>,
    /// A `hitl_request`'s question, neutralised and bounded (`super::hitl`); absent for
    /// other tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// A `hitl_request`'s options, each neutralised and bounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    /// The option the human chose (and confirmed, when asked to) in answer to a
    /// `hitl_request`; absent when none was (declined, dismissed, timed out — even with a
    /// `defaultOption` —, failed, or not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// A `hitl_request`'s `metadata`, bounded and neutralised (`super::hitl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// `timeout_seconds` as JSON: whole seconds as an integer (`60`, not `60.0`), others as they are.
fn seconds_text<S: serde::Serializer>(seconds: &Option<f64>, out: S) -> Result<S::Ok, S::Error> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: every integer below is exact
    match *seconds {
        Some(s) if s.fract() == 0.0 && (0.0..EXACT).contains(&s) => out.serialize_some(&(s as u64)),
        other => other.serialize(out),
    }
}

/// `event: "eval"`: one finished eval (cancelled ones included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalAuditRecord {
    /// When the record was made, RFC 3339 UTC.
    pub ts: String,
    /// The eval ([`AuditRecord::eval_id`]); logs written before ids were strings
    /// hold a number, read as its decimal text.
    #[serde(deserialize_with = "eval_id_text")]
    pub eval_id: String,
    /// Who the eval ran for ([`Caller::name`](crate::Caller)).
    pub caller: String,
    /// The client session; `null` outside MCP.
    pub session_id: Option<String>,
    /// The profile in force; `null` when unprofiled.
    pub profile: Option<String>,
    /// Hex SHA-256 of the code as submitted (UTF-8).
    pub code_sha256: String,
    /// Whether the eval succeeded.
    pub ok: bool,
    /// The class of failure; `null` when `ok`.
    pub error_kind: Option<ErrorKind>,
    /// Fuel consumed (0 for an eval abandoned midway: see [`EvalAuditRecord::abandoned`]).
    pub fuel_used: u64,
    /// Wall-clock time, in milliseconds.
    pub wall_ms: f64,
    /// How many tool calls the script attempted (0 for an eval abandoned midway; its
    /// `tool_call` records still count them).
    pub tool_calls: u64,
}

/// `event: "access"`: a client's `resources/read` or `prompts/get` of an upstream's resource or
/// prompt through codemode, or its subscription to or unsubscription from a resource (a
/// script's read is a `tool_call` of `read_resource`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccessAuditRecord {
    /// When the request ended, RFC 3339 UTC.
    pub ts: String,
    /// Who asked ([`crate::Caller::name`]).
    pub caller: String,
    /// The client session; `null` when the transport has none.
    pub session_id: Option<String>,
    /// The profile that decided it (the base `eval` tool's); `null` when unprofiled.
    pub profile: Option<String>,
    /// `resources/read`, `prompts/get`, `resources/subscribe`, `resources/unsubscribe`, or
    /// `subscriptions/listen` (one URI of a listen stream's `resourceSubscriptions`).
    pub method: String,
    /// What was asked for: `<server>__<original URI>` or `<server>__<prompt name>`.
    pub name: String,
    /// `allowed`, or `denied` (the profile hides it, or the caller may not use `eval`).
    pub decision: Decision,
    /// How it ended: `ok`, `error` (the upstream failed it), `denied`.
    pub status: CallStatus,
    /// Why it was denied or failed, in words.
    pub reason: Option<String>,
    /// Hex SHA-256 of what the upstream returned (canonical JSON), before any masking.
    pub output_sha256: Option<String>,
    /// The paths of the result that the `outputs` policy masked or removed.
    #[serde(default)]
    pub redacted_paths: Vec<String>,
}

impl AccessAuditRecord {
    /// A record stamped now.
    pub fn now(caller: &str, method: &str, name: &str) -> Self {
        AccessAuditRecord {
            ts: now_rfc3339(),
            caller: caller.to_string(),
            session_id: None,
            profile: None,
            method: method.to_string(),
            name: name.to_string(),
            decision: Decision::Allowed,
            status: CallStatus::Ok,
            reason: None,
            output_sha256: None,
            redacted_paths: Vec::new(),
        }
    }
}

/// Who ran an eval, where: what every `eval` record of it shares.
#[derive(Debug, Clone, Copy)]
pub struct EvalAuditContext<'a> {
    /// The runtime's id of the eval (written as [`AuditRecord::eval_id`]).
    pub eval_id: EvalId,
    /// The code as submitted.
    pub code: &'a str,
    /// The caller's name.
    pub caller: &'a str,
    /// The client session, if any.
    pub session_id: Option<&'a str>,
    /// The profile in force, if any.
    pub profile: Option<&'a str>,
    /// The `eval_id` to write instead of [`AuditRecord::eval_id`]`(eval_id)`:
    /// an eval resumed in another process keeps the id its first records were written under.
    pub audit_id: Option<&'a str>,
}

impl EvalAuditRecord {
    /// The record of an eval that ended with `outcome`, stamped now.
    pub fn from_outcome(outcome: &EvalOutcome, cx: EvalAuditContext<'_>) -> Self {
        EvalAuditRecord {
            ok: outcome.ok,
            error_kind: outcome.error.as_ref().map(|e| e.kind),
            fuel_used: outcome.stats.fuel_used,
            wall_ms: outcome.stats.wall_ms,
            tool_calls: u64::try_from(outcome.tool_calls.len()).unwrap_or(u64::MAX),
            ..Self::abandoned(cx, 0.0)
        }
    }

    /// The record of an eval abandoned before it produced an outcome (its task was dropped,
    /// e.g. on MCP cancellation) after `wall_ms`: `ok: false`, `error_kind: "cancelled"`; the
    /// fuel and the number of calls are unknown, and written as 0.
    pub fn abandoned(cx: EvalAuditContext<'_>, wall_ms: f64) -> Self {
        EvalAuditRecord {
            ts: now_rfc3339(),
            eval_id: cx
                .audit_id
                .map_or_else(|| super::audit_eval_id(cx.eval_id), str::to_string),
            caller: cx.caller.to_string(),
            session_id: cx.session_id.map(str::to_string),
            profile: cx.profile.map(str::to_string),
            code_sha256: sha256_hex(cx.code.as_bytes()),
            ok: false,
            error_kind: Some(ErrorKind::Cancelled),
            fuel_used: 0,
            wall_ms,
            tool_calls: 0,
        }
    }
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// Hex SHA-256 of [`canonical_json`]`(args)`: the `args_sha256` field.
pub fn args_sha256(args: &Value) -> String {
    sha256_hex(canonical_json(args).as_bytes())
}

/// `v` as compact JSON with object keys sorted (by their UTF-8 bytes), recursively; strings and
/// numbers as serde_json writes them. Equal values give equal text whatever the key order they
/// were built with.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// An `eval_id` as text: the string written now, or the number older logs hold.
fn eval_id_text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        Text(String),
        Number(u64),
    }
    Ok(match Id::deserialize(deserializer)? {
        Id::Text(text) => text,
        Id::Number(n) => n.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemode_runtime::{EvalError, EvalStats, ToolCallRecord};
    use serde_json::json;

    #[test]
    fn canonical_text_and_hashes() {
        let cases: Vec<(Value, &str)> = vec![
            (
                json!({"b": 1, "a": [true, null, {"d": "x", "c": 1.5}]}),
                r#"{"a":[true,null,{"c":1.5,"d":"x"}],"b":1}"#,
            ),
            (json!({"é": 1, "z": 2, "Z": 3}), r#"{"Z":3,"z":2,"é":1}"#),
            (json!("quote\"\n"), r#""quote\"\n""#),
            (json!({}), "{}"),
        ];
        for (v, want) in cases {
            assert_eq!(canonical_json(&v), want);
        }
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(args_sha256(&json!({})), sha256_hex(b"{}"));
        let mut a = serde_json::Map::new();
        a.insert("y".into(), json!(1));
        a.insert("x".into(), json!(2));
        assert_eq!(
            args_sha256(&Value::Object(a)),
            args_sha256(&json!({"x": 2, "y": 1}))
        );
    }

    #[test]
    fn tool_call_record_shape() {
        let mut rec = ToolCallAuditRecord {
            ts: "2024-05-01T12:34:56.789Z".into(),
            eval_id: "p-7".into(),
            call_id: 2,
            session_id: None,
            profile: Some("supervised".into()),
            tool: "fs__write".into(),
            args_sha256: args_sha256(&json!({"a": 1})),
            args: None,
            disposition: DispositionKind::Ask,
            decision: Decision::Timeout,
            reason: Some("elicitation_timeout".into()),
            status: CallStatus::Denied,
            duration_ms: 1.5,
            caller: "ci".into(),
            risk: Risk::Critical,
            channel: Some(Channel::Http),
            decided_by: Some("ops".into()),
            decision_reason: Some("not now".into()),
            redacted_paths: vec!["/password".into()],
            output_sha256: Some(sha256_hex(b"{}")),
            stage: None,
            classification: None,
            approver_right: None,
            caller_permissions: vec!["deploy".into()],
            timeout_seconds: None,
            joined_ask: None,
            question: None,
            options: None,
            answer: None,
            metadata: None,
        };
        let v = serde_json::to_value(AuditRecord::ToolCall(rec.clone())).unwrap();
        assert_eq!(
            v,
            json!({"ts": "2024-05-01T12:34:56.789Z", "event": "tool_call", "eval_id": "p-7", "call_id": 2,
                   "session_id": null, "profile": "supervised", "tool": "fs__write",
                   "args_sha256": args_sha256(&json!({"a": 1})), "disposition": "ask",
                   "decision": "timeout", "reason": "elicitation_timeout", "status": "denied",
                   "duration_ms": 1.5, "caller": "ci", "risk": "critical", "channel": "http",
                   "decided_by": "ops", "decision_reason": "not now",
                   "redacted_paths": ["/password"], "output_sha256": sha256_hex(b"{}"),
                   "caller_permissions": ["deploy"]})
        );
        // The new fields come last, in this order, after the older ones.
        let line = serde_json::to_string(&rec).unwrap();
        let at = |k: &str| line.find(&format!("\"{k}\":")).unwrap();
        assert!(at("duration_ms") < at("caller") && at("caller") < at("risk"));
        assert!(at("risk") < at("channel") && at("channel") < at("decided_by"));
        assert!(at("decided_by") < at("decision_reason"));
        assert!(at("decision_reason") < at("redacted_paths"));
        assert!(at("redacted_paths") < at("output_sha256"));
        // A record written before these fields existed still reads.
        let old = r#"{"event":"tool_call","ts":"t","eval_id":1,"call_id":1,"session_id":null,
            "profile":null,"tool":"t","args_sha256":"x","disposition":"allow","decision":"allowed",
            "reason":null,"status":"ok","duration_ms":1.0}"#;
        let AuditRecord::ToolCall(old) = serde_json::from_str(old).unwrap() else {
            panic!("not a tool call")
        };
        assert_eq!(
            (old.caller.as_str(), old.risk, old.channel),
            ("", Risk::Medium, None)
        );
        assert_eq!((old.redacted_paths.len(), old.output_sha256), (0, None));
        assert_eq!((old.stage, old.timeout_seconds), (None, None));
        assert!(old.caller_permissions.is_empty() && old.question.is_none());
        rec.args = Some(json!({"a": 1}));
        let line = serde_json::to_string(&AuditRecord::ToolCall(rec.clone())).unwrap();
        assert!(line.contains(r#""args":{"a":1}"#));
        let back: AuditRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(back, AuditRecord::ToolCall(rec));
    }

    /// The stage, the caller's permissions, an ask's timeout and a `hitl_request`'s question,
    /// options, answer and metadata, as written and read back; whole seconds as an integer.
    #[test]
    fn tool_call_record_gateway_fields() {
        let line = r#"{"event":"tool_call","ts":"t","eval_id":"p-1","call_id":1,"session_id":null,
            "profile":"p","tool":"hitl_request","args_sha256":"x","disposition":"ask",
            "decision":"approved","reason":null,"status":"ok","duration_ms":1.0,"caller":"ci",
            "risk":"high","channel":"elicitation","decided_by":"ci","decision_reason":null,
            "redacted_paths":[],"output_sha256":null,"stage":"approval","classification":"write",
            "caller_permissions":["a","b"],"timeout_seconds":60,"question":"Ship?",
            "options":["yes","no"],"answer":"yes","metadata":{"ticket":42}}"#;
        let AuditRecord::ToolCall(mut rec) = serde_json::from_str(line).unwrap() else {
            panic!("not a tool call")
        };
        assert_eq!(
            (rec.stage, rec.timeout_seconds, rec.answer.as_deref()),
            (Some(Stage::Approval), Some(60.0), Some("yes"))
        );
        let written = serde_json::to_value(AuditRecord::ToolCall(rec.clone())).unwrap();
        let read: Value = serde_json::from_str(line).unwrap();
        assert_eq!(written, read);
        assert!(
            serde_json::to_string(&rec)
                .unwrap()
                .contains(r#""timeout_seconds":60,"#)
        );
        rec.timeout_seconds = Some(1.5);
        rec.stage = Some(Stage::Auth);
        let v = serde_json::to_value(&rec).unwrap();
        assert_eq!(
            (&v["timeout_seconds"], &v["stage"]),
            (&json!(1.5), &json!("auth"))
        );
    }

    #[test]
    fn eval_record_from_outcome() {
        let outcome = EvalOutcome {
            ok: false,
            result: Value::Null,
            error: Some(EvalError::new(ErrorKind::Timeout, "too slow")),
            warnings: vec![],
            logs: vec![],
            tool_calls: vec![ToolCallRecord {
                id: 1,
                tool: "t".into(),
                status: CallStatus::Ok,
                reason: None,
                duration_ms: 1.0,
                note: None,
            }],
            stats: EvalStats {
                fuel_used: 42,
                wall_ms: 12.5,
                memory_peak_bytes: 0,
            },
        };
        let cx = EvalAuditContext {
            eval_id: EvalId(3),
            code: "return 1",
            caller: "ci",
            session_id: Some("s1"),
            profile: None,
            audit_id: None,
        };
        let rec = EvalAuditRecord::from_outcome(&outcome, cx);
        let abandoned = EvalAuditRecord::abandoned(cx, 7.5);
        let mut v = serde_json::to_value(AuditRecord::Eval(rec)).unwrap();
        assert_eq!(v["ts"].as_str().unwrap().len(), 24);
        v.as_object_mut().unwrap().remove("ts");
        assert_eq!(
            v,
            json!({"event": "eval", "eval_id": crate::AuditRecord::eval_id(EvalId(3)), "caller": "ci",
                   "session_id": "s1", "profile": null,
                   "code_sha256": sha256_hex(b"return 1"), "ok": false, "error_kind": "timeout",
                   "fuel_used": 42, "wall_ms": 12.5, "tool_calls": 1})
        );
        let mut v = serde_json::to_value(AuditRecord::Eval(abandoned)).unwrap();
        v.as_object_mut().unwrap().remove("ts");
        assert_eq!(
            v,
            json!({"event": "eval", "eval_id": crate::AuditRecord::eval_id(EvalId(3)), "caller": "ci",
                   "session_id": "s1", "profile": null,
                   "code_sha256": sha256_hex(b"return 1"), "ok": false, "error_kind": "cancelled",
                   "fuel_used": 0, "wall_ms": 7.5, "tool_calls": 0})
        );
    }
}
