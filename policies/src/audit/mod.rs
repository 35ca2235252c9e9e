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

pub use chain::AuditKey;
pub use eval_id::audit_eval_id;
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
