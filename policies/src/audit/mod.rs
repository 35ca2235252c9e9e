//! The audit log: what was called, what the policy decided, how it ended.
//!
//! [`PolicyToolHost`](crate::PolicyToolHost) records one [`ToolCallAuditRecord`] per call
//! attempt; the host records one [`EvalAuditRecord`] per eval
//! ([`EvalAuditRecord::from_outcome`]). Records go to an [`AuditSink`]: an [`AuditWriter`]
//! (JSON Lines files) or a [`MemoryAuditSink`]. The files are hash chains
//! ([`Verified::of_dir`] checks them) and can be searched ([`AuditQuery::run`]).

mod chain;
mod csv;
mod decision;
mod eval_id;
pub(crate) mod hitl;
mod query;
mod record;
mod rule;
mod sampling;
mod time;
mod verify;
mod writer;

use std::sync::Mutex;

pub(crate) use eval_id::audit_eval_id;
pub use hitl::{HITL_DEFAULT_TIMEOUT, HITL_MAX_TIMEOUT, HITL_REQUEST};
pub use query::{AuditEvent, AuditFormat, AuditQuery, AuditQueryError, QueriedRecord, QueryResult};
pub use record::{
    AccessAuditRecord, AuditRecord, Decision, EvalAuditContext, EvalAuditRecord,
    SamplingAuditRecord, Stage, ToolCallAuditRecord, args_sha256, canonical_json, sha256_hex,
};
pub use rule::{RuleAction, RuleAuditRecord};
pub use time::{now_rfc3339, rfc3339_utc};
pub use verify::{ChainBreak, ChainHead, Verified};
pub use writer::AuditWriter;

/// How records spell what they carry — hashes, the eval id, times — for those who write
/// records of their own (the host's eval and access records), so that every record agrees.
impl AuditRecord {
    /// Lowercase hex SHA-256 of `bytes`.
    pub fn sha256_hex(bytes: &[u8]) -> String {
        record::sha256_hex(bytes)
    }

    /// `v` as compact JSON with object keys sorted (by their UTF-8 bytes), recursively;
    /// strings and numbers as serde_json writes them. Equal values give equal text whatever
    /// the key order they were built with.
    pub fn canonical_json(v: &serde_json::Value) -> String {
        record::canonical_json(v)
    }

    /// Hex SHA-256 of [`AuditRecord::canonical_json`]`(args)`: the `args_sha256` field.
    pub fn args_sha256(args: &serde_json::Value) -> String {
        record::args_sha256(args)
    }

    /// The `eval_id` written in audit records (`tool_call` and `eval` alike) for the runtime's
    /// `id`: `<prefix>-<n>`, e.g. `7f3a9c01d2e4b5a6-1`, where the prefix is random per process
    /// and `n` is the runtime's number. The runtime's numbers restart at 1 in every process;
    /// the prefix keeps the ids of processes sharing an audit directory apart.
    ///
    /// ```
    /// use codemode_policies::AuditRecord;
    /// use codemode_runtime::EvalId;
    /// let id = AuditRecord::eval_id(EvalId(3));
    /// assert!(id.ends_with("-3") && id.len() == 16 + 2);
    /// assert_eq!(id, AuditRecord::eval_id(EvalId(3)));
    /// ```
    pub fn eval_id(id: codemode_runtime::EvalId) -> String {
        eval_id::audit_eval_id(id)
    }

    /// `t` as RFC 3339 in UTC with milliseconds: `2024-05-01T12:34:56.789Z`. Times before 1970
    /// are written as the epoch, so that every record's `ts` (and the day file it names) sorts
    /// after the log's start.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use codemode_policies::AuditRecord;
    /// let t = UNIX_EPOCH + Duration::from_millis(1_714_566_896_789);
    /// assert_eq!(AuditRecord::rfc3339_utc(t), "2024-05-01T12:34:56.789Z");
    /// ```
    pub fn rfc3339_utc(t: std::time::SystemTime) -> String {
        time::rfc3339_utc(t)
    }

    /// The current time, as [`AuditRecord::rfc3339_utc`].
    pub fn now_rfc3339() -> String {
        time::now_rfc3339()
    }
}

/// Where audit records go. Recording never fails from the caller's point of view: a sink
/// handles (and reports) its own errors.
///
/// [`record`](AuditSink::record) is called from async tasks (each tool call records one), so
/// it must not block on I/O: a sink that writes somewhere slow queues the record and writes
/// it elsewhere, as [`AuditWriter`] does, and makes [`flush`](AuditSink::flush) wait for it.
pub trait AuditSink: Send + Sync {
    /// Records one record, without blocking on I/O.
    fn record(&self, rec: AuditRecord);

    /// Waits until every record recorded so far is stored (for shutdown, and before reading
    /// the records back). May block: async code calls it from `spawn_blocking`. The default
    /// does nothing, for sinks that store each record in `record`.
    fn flush(&self) {}
}

/// Keeps records in memory, in order: for tests and for embedding.
#[derive(Debug, Default)]
pub struct MemoryAuditSink {
    records: Mutex<Vec<AuditRecord>>,
}

impl MemoryAuditSink {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of the records so far.
    pub fn records(&self) -> Vec<AuditRecord> {
        self.records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The tool-call records so far.
    pub fn tool_calls(&self) -> Vec<ToolCallAuditRecord> {
        self.records()
            .into_iter()
            .filter_map(|r| match r {
                AuditRecord::ToolCall(r) => Some(r),
                AuditRecord::Eval(_)
                | AuditRecord::Access(_)
                | AuditRecord::Sampling(_)
                | AuditRecord::Rule(_) => None,
            })
            .collect()
    }
}

impl AuditSink for MemoryAuditSink {
    fn record(&self, rec: AuditRecord) {
        self.records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(rec);
    }
}
