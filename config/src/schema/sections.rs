//! The settings sections: `limits`, `audit`, `approvals`, `durable`, `logging`, `telemetry`
//! (`server` is in [`super::server`], `commands` in [`super::command`]).

use schemars::JsonSchema;
use serde::Deserialize;

use super::values::{Duration, Positive, SecondsOrZero, Size, SizeAtLeast, Timeout, Whole};

/// The smallest `limits.maxResultText`: room for any value elided to its markers.
pub const MIN_RESULT_TEXT: u64 = 256;

/// What one eval may use.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Limits {
    /// WebAssembly fuel budget; `0` means unlimited. Default: 20000000000.
    pub(crate) fuel: Option<Whole>,
    /// Most guest memory. Default: `"64MiB"`.
    pub(crate) memory: Option<Size>,
    /// Wall-clock timeout, not counting time spent waiting for a human. Default: `"30s"`.
    pub(crate) timeout: Option<Timeout>,
    /// Most bytes of logs plus result. Default: `"1MiB"`.
    pub(crate) max_output: Option<Size>,
    /// Most bytes the result takes in the text block of an MCP result (at least 256); the
    /// structured content keeps all of it. Default: `"24KiB"`.
    pub(crate) max_result_text: Option<SizeAtLeast<MIN_RESULT_TEXT>>,
    /// Most bytes of media (images, audio, blobs of upstream tool results) one eval keeps for
    /// its MCP result, apart from `maxOutput`; past it a block is dropped with a note. Default:
    /// `"4MiB"`.
    pub(crate) max_media_bytes: Option<Size>,
    /// Most tool calls per eval; `0` means unlimited. Default: 1000.
    pub(crate) max_tool_calls: Option<Whole>,
    /// Most tool calls in flight at once. Default: 16.
    #[schemars(range(min = 1))]
    pub(crate) max_concurrent_tool_calls: Option<Positive>,
    /// The longest an eval may live, time waiting for a human included. Default: `"15m"`.
    pub(crate) max_eval_lifetime: Option<Duration>,
    /// What one client may hold at once.
    pub(crate) per_client: Option<PerClient>,
    /// Finished results nobody fetched yet.
    pub(crate) unfetched_results: Option<UnfetchedResults>,
}

/// What one client may hold at once.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct PerClient {
    /// Evals running at once. Default: 32.
    #[schemars(range(min = 1))]
    pub(crate) max_concurrent_evals: Option<Positive>,
    /// Evals waiting for a human in memory. Default: 16.
    #[schemars(range(min = 1))]
    pub(crate) max_suspended_evals: Option<Positive>,
    /// Evals parked in the durable store. Default: 256.
    #[schemars(range(min = 1))]
    pub(crate) max_parked_evals: Option<Positive>,
    /// Bytes of the evals parked in the durable store. Default: `"256MiB"`.
    pub(crate) max_parked_bytes: Option<Size>,
}

/// Finished results nobody fetched yet, kept until these caps.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct UnfetchedResults {
    /// Most results kept. Default: 64.
    #[schemars(range(min = 1))]
    pub(crate) max_count: Option<Positive>,
    /// Most bytes kept. Default: `"32MiB"`.
    pub(crate) max_bytes: Option<Size>,
}

/// The audit log: one JSON Lines file per UTC day, hash-chained.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Audit {
    /// Where the files go. Default: none, no audit log.
    pub(crate) dir: Option<String>,
    /// Whether tool-call records hold the arguments, not just their SHA-256. Default: `false`.
    pub(crate) include_args: Option<bool>,
    /// The environment variable holding the key of HMAC-SHA-256 chains. Default: plain
    /// SHA-256 chains.
    pub(crate) key_env: Option<String>,
}

/// Where humans can answer approval requests besides the MCP client.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Approvals {
    /// Serve the HTTP approval API and its page on the `serve --http` listener. Default:
    /// `false`.
    pub(crate) http: Option<bool>,
}

/// The log lines on stderr.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Logging {
    /// `"text"` (for people) or `"json"` (one object per line: `ts`, `level`, `target`,
    /// `message`, `eval_id` and `caller` where known). Default: `"text"`.
    pub(crate) format: Option<LogFormat>,
}

/// Where OpenTelemetry traces are sent.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Telemetry {
    /// The full URL spans are POSTed to, OTLP over HTTP with protobuf bodies, used as it is
    /// (nothing is appended), e.g. `http://127.0.0.1:4318/v1/traces`. Default: none (no traces).
    pub(crate) otlp_endpoint: Option<String>,
}

/// How log lines are written.
// (`crate::LogFormat` read by its name; the schema is the names' enum.)
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(try_from = "String")]
#[schemars(with = "LogFormatName")]
pub(crate) struct LogFormat(pub(crate) crate::log_format::LogFormat);

impl TryFrom<String> for LogFormat {
    type Error = String;

    fn try_from(name: String) -> Result<Self, String> {
        name.parse().map(LogFormat)
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "LogFormat")]
pub(crate) enum LogFormatName {
    /// For people.
    Text,
    /// One JSON object per line.
    Json,
}

/// Where evals waiting for a human, pending approvals and legacy MCP sessions are kept.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Durable {
    /// `"local"` (files in the state directory, the default) or `"redis://HOST:PORT/DB"`.
    pub(crate) store: Option<String>,
    /// The local store's directory. Default: the user's state directory.
    pub(crate) dir: Option<String>,
    /// The environment variable holding the key that seals records. Default:
    /// `"CODEMODE_STATE_KEY"`.
    pub(crate) key_env: Option<String>,
    /// How long an eval waits for a human in memory before it is parked in the store.
    /// Default: 5.
    pub(crate) suspend_to_store_after_seconds: Option<SecondsOrZero>,
    /// Whether local writes are flushed to disk. Default: `true`.
    pub(crate) fsync: Option<bool>,
    /// Bytes of the evals this node keeps parked in the store, all clients together. Default:
    /// `"4GiB"`.
    pub(crate) max_parked_bytes: Option<Size>,
}
