//! codemode's policies: profiles and per-call dispositions, human approval and the audit log — and the whole [`Config`]: the file's settings, read by
//! [`codemode_config`] (whose types its fields are: import them from there), plus its policy
//! sections (profiles, output rules), which this crate reads into its decision types.
//!
//! A script's `codemode.<tool>(args)` reaches a [`codemode_runtime::ToolHost`]. This crate
//! provides the [`PolicyToolHost`] that sits in front of the real one and decides each call —
//! allow, deny, or ask a human — from a [`Profile`], and records every attempt in an audit log.
//! Everything that decides is pure and synchronous ([`Config::from_json_str`],
//! [`Profile::disposition`]); the only async part is waiting for a
//! human, an [`Ask`] put to the [`Asker`] trait that the host implements (terminal prompt, MCP
//! elicitation, the HTTP approval API).
//!
//! # Example
//!
//! ```
//! use codemode_policies::{Config, DispositionKind, MatchedBy};
//! use serde_json::json;
//!
//! let config = Config::from_json_str(r#"{
//!   "evaluation": {
//!     "defaultProfile": "supervised",
//!     "profiles": {
//!       "supervised": {
//!         "denylist": ["filesystem__delete_*"],
//!         "asklist": ["filesystem__*"],
//!         "rules": [{ "tools": ["filesystem__write_file"], "when": { "/path": "^/etc/" },
//!                     "disposition": "deny", "reason": "system files" }]
//!       }
//!     }
//!   },
//!   "limits": { "timeout": "10s", "memory": "128MiB" }
//! }"#)?;
//!
//! // No profile requested: the default one.
//! let profile = config.resolve_profile(None)?.expect("defaultProfile is set");
//!
//! let d = profile.disposition("filesystem__write_file", &json!({ "path": "/etc/passwd" }));
//! assert_eq!(d.kind, DispositionKind::Deny);
//! assert_eq!(d.matched, MatchedBy::Rule(0));
//! assert_eq!(d.reason.as_deref(), Some("system files"));
//!
//! let d = profile.disposition("filesystem__read_file", &json!({ "path": "/tmp/x" }));
//! assert_eq!((d.kind, d.matched), (DispositionKind::Ask, MatchedBy::Asklist("filesystem__*".into())));
//!
//! assert_eq!(profile.disposition("time__now", &json!({})).kind, DispositionKind::Allow);
//! assert_eq!(config.limits.timeout, std::time::Duration::from_secs(10));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The configuration file
//!
//! One JSON document (comments and trailing commas allowed), shared with the MCP side (which
//! reads `mcpServers`). Every section is optional; unknown keys are errors, so is a key given
//! twice in one object, and
//! [`Config::from_json_str`] reports every problem with its JSON path ([`ConfigErrors`]).
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "fs":  { "command": "npx", "args": ["-y", "x"], "env": {"K": "V"}, "cwd": "/x", "timeoutSeconds": 60 },
//!     "web": { "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer x"} }
//!   },
//!   "evaluation": {
//!     "defaultProfile": "supervised",
//!     "profiles": {
//!       "safe":       { "description": "reads the clock",
//!                       "allowlist": ["time__*", "search_tools", "get_tools"] },
//!       "supervised": { "denylist": ["fs__delete_*"], "asklist": ["fs__*"],
//!                       "elicitationFallback": "deny", "approvalTimeoutSeconds": 60,
//!                       "maxPendingApprovals": 4,
//!                       "rules": [{ "tools": ["fs__write_file"], "when": { "/path": "^/etc/" },
//!                                   "disposition": "deny", "reason": "system files" }] }
//!     }
//!   },
//!   "limits": { "fuel": 0, "memory": "64MiB", "timeout": "30s", "maxOutput": "1MiB",
//!               "maxResultText": "24KiB", "maxToolCalls": 0, "maxConcurrentToolCalls": 16 },
//!   "audit":  { "dir": "./audit-logs", "includeArgs": false }
//! }
//! ```
//!
//! - `mcpServers` (alias `servers`, not both): by name (`^[A-Za-z0-9_-]{1,64}$`, no `__`),
//!   either stdio (`command`, optional `args`, `env`, `cwd`) or HTTP (`url`, optional
//!   `headers`), with an optional `timeoutSeconds` per call (default 60) and
//!   `startTimeoutSeconds` (default 30). Entries as MCP clients write them read as they are:
//!   `type`, `disabled`, `autoApprove`/`alwaysAllow` (ignored, with a [`ConfigWarning`]),
//!   `${VAR}`/`${env:VAR}`/`${VAR:-default}` in `args`, `env`, `headers`, `url`; `"type": "sse"`
//!   is refused. See [`ServerConfig`] and [`Config::from_json_str_with_env`].
//! - `evaluation`: profiles by name (`^[A-Za-z0-9_]{1,32}$`) and the `defaultProfile`. Evals
//!   are unrestricted unless a profile is requested or `defaultProfile` is set
//!   ([`Config::resolve_profile`]).
//! - `limits`: sizes as `64MiB`, `512KiB`, `10MB`, `1000` ([`parse_size`]); durations as `30s`,
//!   `500ms`, `2m`, `1h` ([`parse_duration`]); `0` fuel or tool calls means unlimited. See
//!   [`Limits`] for the defaults.
//! - `audit`: a directory for JSON Lines files, whether to log arguments, and `keyEnv` (HMAC chains)
//!   ([`AuditConfig`]; [`Verified::of_dir`], [`AuditQuery::run`]).
//! - `durable`: where evals waiting for a human are kept, `"local"` (the default, in
//!   [`default_state_dir`]) or `"redis://HOST:PORT/DB"`, and the variable holding the key that
//!   seals them ([`DurableConfig`]).
//!
//! [`Config::default`] (no file) has no servers, no profiles, default limits and no audit log;
//! [`DEFAULT_CONFIG_JSON`] is the same as a file.
//!
//! [`ConfigErrors`]: codemode_config::ConfigErrors
//! [`ConfigWarning`]: codemode_config::ConfigWarning
//! [`ServerConfig`]: codemode_config::ServerConfig
//! [`parse_size`]: codemode_config::parse_size
//! [`parse_duration`]: codemode_config::parse_duration
//! [`Limits`]: codemode_config::Limits
//! [`AuditConfig`]: codemode_config::AuditConfig
//! [`default_state_dir`]: codemode_config::default_state_dir
//! [`DurableConfig`]: codemode_config::DurableConfig
//! [`DEFAULT_CONFIG_JSON`]: codemode_config::DEFAULT_CONFIG_JSON
//!
//! # Profiles
//!
//! A call's disposition is decided on the called name (and, for rules, its arguments), in this
//! order — see [`Profile::disposition`]:
//!
//! 1. a `denylist` glob → deny, always (no rule overrides it);
//! 2. the first matching rule (`tools` globs match and every `when` condition holds: a JSON
//!    Pointer into the arguments, whose value must match a regex);
//! 3. an `asklist` glob → ask;
//! 4. with an `allowlist`: not matching → deny, matching → allow; 5. otherwise the profile's
//!    `defaultDisposition` (default allow).
//!
//! Each call also gets a [`Risk`] (rules' `risk`, the profile's `risk` globs in written order,
//! `defaultRisk`), whose [`RiskPolicy`] (`riskPolicies`) bounds what a human may answer.
//! Profiles and rules may require caller permissions (`requirePermissions`, checked against the
//! [`Caller`]): a rule's missing permission denies the call with reason `permission`.
//! An optional `description` (the operator's words, at most 500 characters) and
//! [`Profile::summary`] (what the lists and rules allow, ask about and deny) tell a model what
//! each profile's eval tool may do.
//!
//! Globs are [globset] globs; tool names contain no `/`, so `*` matches across the `__`
//! between server and tool: `fs__*` matches `fs__dir__list`. Matching is case-sensitive.
//!
//! # Enforcement, approval, audit
//!
//! [`PolicyToolHost`] applies a profile to each call: denied calls never reach the inner host
//! and fail with [`codemode_runtime::ToolError::Denied`] (the script sees a
//! `ToolCallDeniedError` with `.toolName` and `.reason`); asks go to the [`Asker`], with a
//! timeout, a cap on pending prompts, and approvals remembered for the eval or the session
//! ([`SessionApprovals`]). Time spent waiting for a human does not count toward the eval's
//! timeout. Each attempt is recorded once in an [`AuditSink`] ([`AuditWriter`]: one JSON Lines
//! file per UTC day).
//!
//! # Static preview
//!
//! An [`ApprovalRequest`] carries the script's call sites, a [`codemode_script::Preview`]
//! found without running it (the `codemode-script` crate, the one that parses JavaScript).

#![doc(test(attr(deny(warnings))))]

mod approval;
mod ask;
mod audit;
mod caller;
mod change;
mod classify;
mod config;
mod decision;
mod display;
mod enforce;
mod outputs;
mod profile;
mod remember;
mod risk;
mod schemas;

pub(crate) use approval::new_request_id;
pub use approval::{
    ApprovalAnswer, ApprovalRequest, Channel, ParkedAsk, ParkedQuestion, SessionApprovals,
};
pub use ask::{Answer, Ask, AskKind, Asker, NoAsker, Question, Reply};

pub use audit::{
    AccessAuditRecord, AuditRecord, AuditSink, AuditWriter, Decision, EvalAuditRecord,
    MemoryAuditSink, RuleAction, RuleAuditRecord, SamplingAuditRecord, Stage, ToolCallAuditRecord,
};
pub(crate) use audit::{args_sha256, canonical_json, now_rfc3339, rfc3339_utc, sha256_hex};
// The audit chain, its verification and queries (issue 15 §7).
// What a `tool_call` record keeps of a `hitl_request` (issue 28 B.2).
pub use audit::{
    AuditEvent, AuditFormat, AuditQuery, AuditQueryError, ChainBreak, ChainHead, EvalAuditContext,
    QueriedRecord, QueryResult, Verified,
};
pub use audit::{HITL_DEFAULT_TIMEOUT, HITL_MAX_TIMEOUT, HITL_REQUEST};

pub(crate) use caller::ALLOW_DESTRUCTIVE;
pub use caller::Caller;
pub(crate) use change::change_summary;
pub use classify::{Class, Classification};
pub use config::{Config, EvaluationConfig, UnknownProfile};
// The file's settings and errors are `codemode_config`'s (embedders import them from there);
// these are the ones this crate's readers use.
pub(crate) use codemode_config::{ConfigErrorKind, ConfigErrors, parse_duration};
pub use decision::ApprovalDecision;

pub use display::{
    bounded, invisible_ranges, is_blank, is_invisible, neutralize, quoted, summarize_args,
};
pub use enforce::{
    Alternative, PendingAsks, PendingSlot, PendingSlots, PolicyToolHost, PolicyToolHostBuilder,
    ResultObserver,
};
pub use outputs::{InvalidPathPattern, OutputPolicy, OutputRule, PathPattern};

pub use profile::{
    ApprovalDiff, Condition, Disposition, DispositionKind, Fallback, MatchedBy, PathCondition,
    PathValue, Profile, Rule,
};
pub(crate) use remember::spell_period;
pub use remember::{
    Approved, RememberedRule, RememberedRules, RuleStore, RuleStoreError, UpstreamIdentity,
};

pub(crate) use risk::needed_permissions;
pub use risk::{DecisionRefused, NotAnApprover, Risk, RiskPolicy};

pub use schemas::{
    InvalidArguments, Keys, MEDIA_KEY, SchemaKind, SchemaProblem, SchemaSource, ToolSchemaSpec,
    ToolSchemas, Violation,
};
