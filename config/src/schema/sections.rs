//! The settings sections: `limits`, `audit`, `approvals`, `server`, `commands`, `durable`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::values::{
    Duration, Positive, Seconds, SecondsOrZero, Size, SizeAtLeast, Timeout, Whole,
};

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

/// How `codemode serve --http` accepts requests.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Server {
    /// Hosts, origins and the listener's limits.
    pub(crate) http: Option<Http>,
    /// Who may call: static tokens or JWTs, one of them. Default: none.
    pub(crate) auth: Option<Auth>,
    /// Health and metrics: `/healthz`, `/readyz`, `/metrics`.
    pub(crate) admin: Option<Admin>,
}

/// Health and metrics, served on the `serve --http` listener and, with `listen`, on a listener
/// of their own.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Admin {
    /// The admin listener's `IP:PORT` (health and metrics only). Default: none.
    pub(crate) listen: Option<String>,
    /// Whether metrics are kept and `/metrics` served. Default: `true`.
    pub(crate) metrics: Option<bool>,
    /// The bearer token `/metrics` demands: `sha256` (its hash) or `env` (a variable holding
    /// it). Default: none, `/metrics` is open.
    pub(crate) metrics_auth: Option<MetricsAuth>,
}

/// The token `/metrics` demands: `sha256` or `env`, one of them.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MetricsAuth {
    /// The token's SHA-256, 64 hex digits.
    pub(crate) sha256: Option<String>,
    /// The environment variable holding the token.
    pub(crate) env: Option<String>,
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

/// The HTTP listener's checks and limits.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Http {
    /// `Host` headers accepted besides the loopback ones.
    pub(crate) allowed_hosts: Option<Vec<String>>,
    /// Browser `Origin`s accepted (`https://app.example.com`, `https://*.example.com`).
    pub(crate) allowed_origins: Option<Vec<String>>,
    /// Most MCP sessions at once.
    #[schemars(range(min = 1))]
    pub(crate) max_sessions: Option<u64>,
    /// Most MCP sessions of one client at once.
    #[schemars(range(min = 1))]
    pub(crate) max_sessions_per_client: Option<u64>,
    /// How long a request's headers may take to arrive.
    pub(crate) header_read_timeout: Option<Duration>,
    /// How long a request's body may take to arrive.
    pub(crate) body_read_timeout: Option<Duration>,
    /// The largest request body.
    pub(crate) max_request_body: Option<Size>,
    /// Open connections of one listener in all (default: sized from the descriptor limit).
    #[schemars(range(min = 1))]
    pub(crate) max_connections: Option<u64>,
    /// Open connections of one listener from one IPv4 address or IPv6 /64 (default 64).
    #[serde(rename = "maxConnectionsPerIp")]
    #[schemars(range(min = 1))]
    pub(crate) max_connections_per_ip: Option<u64>,
    /// How long an approval event stream stays open before the client reconnects (default 1h).
    pub(crate) max_stream_lifetime: Option<Duration>,
    /// Approval event streams one caller holds open at once (default 16).
    #[schemars(range(min = 1))]
    pub(crate) max_streams_per_caller: Option<u64>,
}

/// Who may call: `tokens`, `jwt` or `oauth`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Auth {
    /// Static bearer tokens.
    pub(crate) tokens: Option<Vec<Token>>,
    /// JWT bearer tokens.
    pub(crate) jwt: Option<Jwt>,
    /// An OAuth 2.1 protected resource: access tokens from external authorization servers.
    pub(crate) oauth: Option<OAuthResource>,
}

/// codemode as an OAuth 2.1 protected resource (MCP authorization, RFC 9728).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct OAuthResource {
    /// The issuer URLs whose JWT access tokens are accepted; keys found by RFC 8414 / OpenID
    /// discovery.
    pub(crate) authorization_servers: Vec<String>,
    /// This server's canonical URL (e.g. `https://codemode.example/mcp`): the required `aud`.
    pub(crate) resource: String,
    /// The permissions each scope grants; a scope not listed grants none.
    pub(crate) scope_permissions: Option<std::collections::BTreeMap<String, Vec<String>>>,
}

/// One static bearer token: `sha256` (its hash) or `env` (a variable holding it), not both.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Token {
    /// The caller's name, in the audit log.
    pub(crate) name: String,
    /// The token's SHA-256, 64 hex digits; the file never holds the token.
    pub(crate) sha256: Option<String>,
    /// The environment variable holding the token.
    pub(crate) env: Option<String>,
    /// The caller's permissions.
    pub(crate) permissions: Option<Vec<String>>,
}

/// JWT bearer tokens: `hs256SecretEnv` or `jwksFile`, one of them.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Jwt {
    /// The required `iss`.
    pub(crate) issuer: String,
    /// The required `aud`.
    pub(crate) audience: String,
    /// The environment variable holding the HS256 secret.
    pub(crate) hs256_secret_env: Option<String>,
    /// A JWKS file of public keys.
    pub(crate) jwks_file: Option<String>,
    /// The claim listing the caller's permissions. Default: `"permissions"`.
    pub(crate) permissions_claim: Option<String>,
}

/// A local program offered to scripts as a tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Command {
    /// The program: a path, or a name looked up in a fixed `PATH`.
    pub(crate) command: String,
    /// Argument templates: literal, `{param}` (one argument) or `{param...}` (an array).
    pub(crate) args: Option<Vec<String>>,
    /// The JSON Schema of the tool's arguments (an object schema declaring every placeholder).
    pub(crate) input_schema: Option<Value>,
    /// The tool's description. Default: "Runs `command args…`."
    pub(crate) description: Option<String>,
    /// The program's working directory.
    pub(crate) cwd: Option<String>,
    /// The program's environment variables (nothing else is inherited but a fixed set).
    pub(crate) env: Option<BTreeMap<String, String>>,
    /// How long a run may take. Default: 10.
    pub(crate) timeout_seconds: Option<Seconds>,
    /// Most bytes of output read. Default: `"1MiB"`.
    pub(crate) max_output: Option<Size>,
    /// How the output is returned. Default: `"text"`.
    pub(crate) output: Option<CommandOutput>,
}

/// How a command's output is returned to the script.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CommandOutput {
    /// One string.
    Text,
    /// An array of lines.
    Lines,
    /// Parsed JSON.
    Json,
    /// An array of parsed JSON lines.
    Jsonl,
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
