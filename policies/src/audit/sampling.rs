//! `event: "sampling"`: an upstream server's request to sample the client's model, made during a
//! script's call, and what became of it.
//!
//! The record does not carry the messages: they are whatever the upstream put in its prompt —
//! often the very tool results and user data the `outputs` policy masks elsewhere, and images
//! that would swell the log. Their SHA-256 (of the request's canonical JSON) lets an auditor who
//! holds a request match it; the counts, `maxTokens` and the model that answered say what was
//! asked of whom.

use codemode_runtime::CallStatus;
use serde::{Deserialize, Serialize};

use super::decision::Decision;
use super::time::now_rfc3339;
use crate::Channel;

/// One sampling request (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingAuditRecord {
    /// When the request ended, RFC 3339 UTC.
    pub ts: String,
    /// The `eval_id` of the eval whose call the request came during.
    pub eval_id: String,
    /// Who the eval runs for ([`crate::Caller::name`]).
    pub caller: String,
    /// The client session; `null` when the transport has none.
    pub session_id: Option<String>,
    /// The profile that decided it; `null` when unprofiled.
    pub profile: Option<String>,
    /// The upstream server that asked.
    pub server: String,
    /// `allowed`, `denied` (the profile, or no client to sample with), `approved`,
    /// `declined`, `timeout`, `unsupported` (nobody could be asked: `elicitationFallback`).
    pub decision: Decision,
    /// Where a human's decision came from (`elicitation`, `http`, `terminal`), `fallback`, or
    /// `policy` (a timeout); `null` when nobody was asked.
    pub channel: Option<Channel>,
    /// Who answered, when the channel names them.
    pub decided_by: Option<String>,
    /// How it ended: `ok` (the client's model answered), `error` (the client failed it),
    /// `denied` (it never reached the client).
    pub status: CallStatus,
    /// Why it was refused or failed, in words.
    pub reason: Option<String>,
    /// How many messages the request carried.
    pub messages: usize,
    /// The request's `maxTokens`.
    pub max_tokens: u32,
    /// Hex SHA-256 of the request's parameters (canonical JSON).
    pub request_sha256: String,
    /// The model the client says answered; `null` when none did.
    pub model: Option<String>,
}

impl SamplingAuditRecord {
    /// A record stamped now, of a request not (yet) decided: `denied`, nothing asked.
    pub fn now(eval_id: &str, caller: &str, server: &str) -> Self {
        SamplingAuditRecord {
            ts: now_rfc3339(),
            eval_id: eval_id.to_string(),
            caller: caller.to_string(),
            session_id: None,
            profile: None,
            server: server.to_string(),
            decision: Decision::Denied,
            channel: None,
            decided_by: None,
            status: CallStatus::Denied,
            reason: None,
            messages: 0,
            max_tokens: 0,
            request_sha256: String::new(),
            model: None,
        }
    }
}
