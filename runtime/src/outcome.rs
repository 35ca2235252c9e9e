//! What an eval returns: [`EvalOutcome`], serialised to the JSON shape that `codemode run --json`
//! prints and the MCP server returns as structured content.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The full result of one eval: value or error, captured logs, the ledger of tool calls, stats.
///
/// Serialises to exactly:
/// `{"ok", "result", "error", "warnings", "logs", "tool_calls", "stats"}` (see the crate docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalOutcome {
    /// `true` when the script finished and its result was JSON-serialisable.
    pub ok: bool,
    /// The script's result (`undefined` becomes `null`); `null` when `ok` is false.
    pub result: Value,
    /// Why the eval failed; `None` when `ok`.
    pub error: Option<EvalError>,
    /// Things that did not stop the script but are probably mistakes (a tool's output that does
    /// not match its declared schema, …), in the order they were noticed; empty when none.
    #[serde(default)]
    pub warnings: Vec<Warning>,
    /// `console.*` output, in order.
    pub logs: Vec<LogEntry>,
    /// Every tool call the script attempted, in order of start (the ledger).
    pub tool_calls: Vec<ToolCallRecord>,
    /// Resource use.
    pub stats: EvalStats,
}

/// Why an eval failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalError {
    /// The class of failure.
    pub kind: ErrorKind,
    /// Human-readable message.
    pub message: String,
    /// 1-based line in the user's code, when known.
    pub line: Option<u32>,
    /// 1-based column in the user's code, when known.
    pub column: Option<u32>,
    /// The JS stack, with positions in the user's code, when there is one.
    pub stack: Option<String>,
}

impl EvalError {
    /// An error with no position.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        EvalError {
            kind,
            message: message.into(),
            line: None,
            column: None,
            stack: None,
        }
    }
}

/// Something about an eval that is probably a mistake but did not stop it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// What was noticed and, where there is one, the likely fix.
    pub message: String,
    /// 1-based line in the user's code, when known.
    pub line: Option<u32>,
    /// 1-based column in the user's code, when known.
    pub column: Option<u32>,
}

impl Warning {
    /// A warning with no position.
    pub fn new(message: impl Into<String>) -> Self {
        Warning {
            message: message.into(),
            line: None,
            column: None,
        }
    }
}

/// The class of an eval failure: each limit has its own.
///
/// In JSON (`error.kind`) each kind is its snake_case name ([`ErrorKind::as_str`]): `syntax`,
/// `exception`, `out_of_fuel`, `memory_limit`, `timeout`, `cancelled`, `output_limit`,
/// `stack_overflow`, `tool_limit`, `invalid_options`, `internal`. More kinds may be added, so
/// a `match` needs a wildcard arm.
///
/// ```
/// use codemode_runtime::ErrorKind;
/// assert_eq!(ErrorKind::Cancelled.as_str(), "cancelled");
/// assert_eq!(serde_json::to_string(&ErrorKind::InvalidOptions).unwrap(), r#""invalid_options""#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The code does not parse.
    Syntax,
    /// The script threw (or its promise rejected), or its result is not JSON-serialisable.
    Exception,
    /// The fuel budget (WebAssembly instructions) ran out.
    OutOfFuel,
    /// The script needed more memory than allowed.
    MemoryLimit,
    /// The wall-clock timeout passed (time in tool calls included).
    Timeout,
    /// The caller cancelled the eval ([`crate::Runtime::eval_cancellable`]).
    Cancelled,
    /// Logs and result together exceeded the output limit.
    OutputLimit,
    /// Recursion went deeper than the stack allows.
    StackOverflow,
    /// The script attempted more tool calls than allowed.
    ToolLimit,
    /// The [`crate::EvalOptions`] were invalid for this runtime (see
    /// [`crate::EvalOptions::validate`]); the script did not run.
    InvalidOptions,
    /// Something went wrong in the sandbox itself (a bug, or a malformed guest).
    Internal,
}

impl ErrorKind {
    /// Every kind, in the order the documentation lists them.
    pub const ALL: [ErrorKind; 11] = [
        ErrorKind::Syntax,
        ErrorKind::Exception,
        ErrorKind::OutOfFuel,
        ErrorKind::MemoryLimit,
        ErrorKind::Timeout,
        ErrorKind::Cancelled,
        ErrorKind::OutputLimit,
        ErrorKind::StackOverflow,
        ErrorKind::ToolLimit,
        ErrorKind::InvalidOptions,
        ErrorKind::Internal,
    ];

    /// The snake_case name used in JSON and in CLI messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "syntax",
            ErrorKind::Exception => "exception",
            ErrorKind::OutOfFuel => "out_of_fuel",
            ErrorKind::MemoryLimit => "memory_limit",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::OutputLimit => "output_limit",
            ErrorKind::StackOverflow => "stack_overflow",
            ErrorKind::ToolLimit => "tool_limit",
            ErrorKind::InvalidOptions => "invalid_options",
            ErrorKind::Internal => "internal",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `console.*` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// Which console method.
    pub level: LogLevel,
    /// The arguments, formatted (objects as JSON) and joined with spaces.
    pub message: String,
}

/// A console method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    /// `console.log`
    Log,
    /// `console.info`
    Info,
    /// `console.warn`
    Warn,
    /// `console.error`
    Error,
    /// `console.debug`
    Debug,
}

impl LogLevel {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Log => "log",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
            LogLevel::Debug => "debug",
        }
    }
}

/// One entry of the ledger: a tool call the script attempted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// 1-based, in order of start; the same as [`crate::CallContext::call_id`].
    pub id: u64,
    /// The name the script called.
    pub tool: String,
    /// How it ended. A call still running when the eval ended is recorded as `error` with
    /// reason `"unfinished: …"` (it may or may not have had its effect).
    pub status: CallStatus,
    /// For `error` and `denied`: why.
    pub reason: Option<String>,
    /// From start to settlement, in milliseconds.
    pub duration_ms: f64,
    /// What the tool layer said of the call ([`crate::CallContext::note`]), e.g. `approved by
    /// alice via http`: so that a model can tell the user a human agreed. Left out when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// The tool returned a value.
    Ok,
    /// The tool failed, does not exist, or did not finish.
    Error,
    /// A policy refused the call; the tool was never reached.
    Denied,
}

impl CallStatus {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Ok => "ok",
            CallStatus::Error => "error",
            CallStatus::Denied => "denied",
        }
    }
}

/// Resource use of one eval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct EvalStats {
    /// WebAssembly fuel consumed (0 when fuel metering is off).
    pub fuel_used: u64,
    /// Wall-clock time of the whole eval, tool calls included, in milliseconds.
    pub wall_ms: f64,
    /// The largest linear memory the guest reached, in bytes.
    pub memory_peak_bytes: u64,
}

#[cfg(test)]
mod kind_tests {
    use super::ErrorKind;

    /// `ALL` holds every kind once, in order: the match has no wildcard, so a new kind does not
    /// compile until it is placed here (and in `ALL`).
    #[test]
    fn all_lists_every_kind_once() {
        let position = |kind: ErrorKind| match kind {
            ErrorKind::Syntax => 0,
            ErrorKind::Exception => 1,
            ErrorKind::OutOfFuel => 2,
            ErrorKind::MemoryLimit => 3,
            ErrorKind::Timeout => 4,
            ErrorKind::Cancelled => 5,
            ErrorKind::OutputLimit => 6,
            ErrorKind::StackOverflow => 7,
            ErrorKind::ToolLimit => 8,
            ErrorKind::InvalidOptions => 9,
            ErrorKind::Internal => 10,
        };
        for (i, kind) in ErrorKind::ALL.into_iter().enumerate() {
            assert_eq!(position(kind), i, "{kind:?}");
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::json!(kind.as_str())
            );
        }
    }
}
