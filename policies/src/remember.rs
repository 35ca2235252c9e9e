//! Remembered approvals: "approve this call from now on" recorded as a rule
//! ([`RememberedRule`]) that allows the same call again without asking until it expires.
//!
//! A rule is never wider than what the human saw: it names the caller, the profile, the tool
//! and the SHA-256 of the arguments' canonical JSON (the exact arguments shown), and the risk
//! of the call approved. A later call matches only with all four equal and a risk no higher;
//! it replaces only an *ask* (a deny is decided before any rule is looked at), and only while
//! the call's risk level still has `rememberFor`. Rules live in a [`RuleStore`]: the durable
//! store when the server has one (every node of a cluster applies them; the host implements
//! the trait), else [`MemoryRuleStore`] for the process. Creating and revoking one writes an
//! `event: "rule"` audit record ([`RuleAuditRecord`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

use codemode_runtime::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::audit::{RuleAction, RuleAuditRecord};
use crate::{AuditRecord, AuditSink, Channel, Risk, args_sha256, canonical_json, sha256_hex};

/// One remembered approval. Its [`id`](Self::id) is derived from what it covers, so the same
/// approval given twice is one rule (the later expiry wins).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RememberedRule {
    /// 32 hex digits ([`RememberedRule::id_of`]).
    pub id: String,
    /// The caller whose calls it allows.
    pub caller: String,
    /// The profile it applies in.
    pub profile: String,
    /// The tool it allows.
    pub tool: String,
    /// Hex SHA-256 of the canonical JSON of the only arguments it allows.
    pub args_sha256: String,
    /// The risk of the call approved: calls of a higher risk are asked about again.
    pub risk: Risk,
    /// When it was created, RFC 3339 UTC.
    pub created_at: String,
    /// When it was created, in milliseconds since the Unix epoch (0 in a rule recorded before
    /// the field existed: such a rule covers nothing).
    #[serde(default)]
    pub created_at_ms: u64,
    /// When it expires, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
    /// What identified the upstream server of the tool when it was approved (a digest of its
    /// command or URL, see [`UpstreamIdentity`]); `None` for a tool of no upstream. A rule
    /// covers a call only while its tool's upstream is still the same one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// Who approved, when the channel knows.
    pub approved_by: Option<String>,
    /// The permission of the risk level's `approvers` by which they approved (`None`: the
    /// level named none then). While the level names approvers, only a rule given with one of
    /// them covers a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_with: Option<String>,
    /// Through which channel.
    pub channel: Channel,
}

impl RememberedRule {
    /// The id of the rule covering `caller`'s calls of `tool` with arguments hashed
    /// `args_sha256` under `profile`.
    pub fn id_of(caller: &str, profile: &str, tool: &str, args_sha256: &str) -> String {
        let scope = json!([caller, profile, tool, args_sha256]);
        sha256_hex(canonical_json(&scope).as_bytes())[..32].to_string()
    }

    /// Whether it covers a call at `now_ms` whose risk level remembers approvals for
    /// `period` now and whose tool's upstream is identified by `upstream` now: only within
    /// the current period of its creation (a shortened `rememberFor` shortens the rules already
    /// recorded) and only for the same upstream (a reload that gives the server's name to
    /// another command or URL ends it).
    pub fn covers(&self, now_ms: u64, period: Duration, upstream: Option<&str>) -> bool {
        let period_ms = u64::try_from(period.as_millis()).unwrap_or(u64::MAX);
        let until = self
            .expires_at_ms
            .min(self.created_at_ms.saturating_add(period_ms));
        until > now_ms && self.upstream.as_deref() == upstream
    }

    /// When it expires, RFC 3339 UTC.
    pub fn expires_at(&self) -> String {
        crate::rfc3339_utc(UNIX_EPOCH + Duration::from_millis(self.expires_at_ms))
    }

    fn audit_record(&self, action: RuleAction, by: Option<String>, channel: &str) -> AuditRecord {
        AuditRecord::Rule(RuleAuditRecord {
            ts: crate::now_rfc3339(),
            action,
            rule_id: self.id.clone(),
            caller: self.caller.clone(),
            profile: self.profile.clone(),
            tool: self.tool.clone(),
            args_sha256: self.args_sha256.clone(),
            risk: self.risk,
            expires_at: self.expires_at(),
            by,
            channel: channel.to_string(),
        })
    }
}

/// A [`RuleStore`] that could not be read or written: which store, and what failed there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the remembered approvals in {store}: {problem}")]
pub struct RuleStoreError {
    /// The store, as its owner describes it (`Redis at …`, a directory).
    pub store: String,
    /// What failed, in words.
    pub problem: String,
}

impl RuleStoreError {
    /// `problem` in the store described as `store`.
    pub fn new(store: impl Into<String>, problem: impl std::fmt::Display) -> Self {
        RuleStoreError {
            store: store.into(),
            problem: problem.to_string(),
        }
    }
}

/// Where rules are kept.
pub trait RuleStore: Send + Sync {
    /// The rule `id`, if there (expired or not: [`RememberedRules`] checks).
    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<RememberedRule>, RuleStoreError>>;
    /// Keeps `rule` (replacing one with its id) for at least `ttl`.
    fn put<'a>(
        &'a self,
        rule: &'a RememberedRule,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), RuleStoreError>>;
    /// Every rule kept.
    fn list(&self) -> BoxFuture<'_, Result<Vec<RememberedRule>, RuleStoreError>>;
    /// Removes the rule `id`; whether it was there.
    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, RuleStoreError>>;
}

/// Rules in memory, for one process (when there is no durable store). Like the durable store,
/// it keeps a rule only for the time it was put for: one past it is dropped at the next write,
/// so that the rules of a long-running process do not pile up.
#[derive(Debug, Default)]
pub struct MemoryRuleStore {
    rules: Mutex<HashMap<String, (RememberedRule, Option<Instant>)>>,
}

impl MemoryRuleStore {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, (RememberedRule, Option<Instant>)>> {
        // A map of plain values: a panic cannot leave it inconsistent.
        self.rules.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether a rule kept until `until` is still kept (`None`: a time beyond what the clock
/// counts).
fn kept(until: Option<Instant>) -> bool {
    until.is_none_or(|until| until > Instant::now())
}

impl RuleStore for MemoryRuleStore {
    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<RememberedRule>, RuleStoreError>> {
        let rule = self
            .lock()
            .get(id)
            .filter(|(_, until)| kept(*until))
            .map(|(rule, _)| rule.clone());
        Box::pin(async move { Ok(rule) })
    }

    fn put<'a>(
        &'a self,
        rule: &'a RememberedRule,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), RuleStoreError>> {
        let until = Instant::now().checked_add(ttl);
        let mut rules = self.lock();
        rules.retain(|_, (_, until)| kept(*until));
        if kept(until) {
            rules.insert(rule.id.clone(), (rule.clone(), until));
        } else {
            rules.remove(&rule.id);
        }
        Box::pin(async { Ok(()) })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<RememberedRule>, RuleStoreError>> {
        let rules = self
            .lock()
            .values()
            .filter(|(_, until)| kept(*until))
            .map(|(rule, _)| rule.clone())
            .collect();
        Box::pin(async move { Ok(rules) })
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, RuleStoreError>> {
        let removed = self.lock().remove(id).is_some_and(|(_, until)| kept(until));
        Box::pin(async move { Ok(removed) })
    }
}

/// Where the audit records of rules go, looked up at each write (a config reload may change
/// the sink).
pub(crate) type AuditSource = Arc<dyn Fn() -> Option<Arc<dyn AuditSink>> + Send + Sync>;

/// Milliseconds since the Unix epoch: the clock expiries are read against.
pub(crate) type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// What identifies the upstream server of a tool (`server__tool`) now, from the current
/// config: `None` for a tool of no upstream. Looked up at each call, so that a config reload
/// is seen.
pub type UpstreamIdentity = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What a human approved "from now on": the call, and who approved it through which channel.
#[derive(Debug, Clone)]
pub struct Approved<'a> {
    /// The caller the eval runs for.
    pub caller: &'a str,
    /// The profile that asked.
    pub profile: &'a str,
    /// The tool called.
    pub tool: &'a str,
    /// The arguments as shown.
    pub args: &'a Value,
    /// The call's risk.
    pub risk: Risk,
    /// What identifies the tool's upstream server ([`UpstreamIdentity`]).
    pub upstream: Option<String>,
    /// Who approved, when known.
    pub approved_by: Option<String>,
    /// The `approvers` permission by which they approved, if the level names approvers.
    pub approved_with: Option<String>,
    /// Through which channel.
    pub channel: Channel,
}

/// The remembered rules of a server: looked up before an ask, created by an answer, listed and
/// revoked by the approval API and `codemode rules`. See the module docs.
#[derive(Clone)]
pub struct RememberedRules {
    store: Arc<dyn RuleStore>,
    audit: Option<AuditSource>,
    clock: Clock,
}

impl std::fmt::Debug for RememberedRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RememberedRules").finish_non_exhaustive()
    }
}

impl RememberedRules {
    /// Rules kept in `store`, read against the system clock, not audited.
    pub fn new(store: Arc<dyn RuleStore>) -> Self {
        RememberedRules {
            store,
            audit: None,
            clock: Arc::new(crate::approval::now_ms),
        }
    }

    /// Rules kept in this process's memory.
    pub fn in_memory() -> Self {
        Self::new(Arc::new(MemoryRuleStore::default()))
    }

    /// Writes the creation and revocation of rules to the sink `audit` gives, looked up at each
    /// write (a config reload may change the sink).
    pub fn with_audit(mut self, audit: AuditSource) -> Self {
        self.audit = Some(audit);
        self
    }

    /// Reads expiries against `clock`, milliseconds since the Unix epoch (tests move it).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    fn audit(&self, record: AuditRecord) {
        if let Some(sink) = self.audit.as_ref().and_then(|source| source()) {
            sink.record(record);
        }
    }

    /// The live rule allowing `caller`'s call of `tool` with `args` at `risk` under `profile`,
    /// if any.
    ///
    /// # Errors
    /// The store could not be read.
    pub fn matching<'a>(
        &'a self,
        caller: &'a str,
        profile: &'a str,
        tool: &'a str,
        args: &'a Value,
        risk: Risk,
    ) -> BoxFuture<'a, Result<Option<RememberedRule>, RuleStoreError>> {
        Box::pin(async move {
            let hash = args_sha256(args);
            let id = RememberedRule::id_of(caller, profile, tool, &hash);
            let Some(rule) = self.store.get(&id).await? else {
                return Ok(None);
            };
            // The id is a digest: the rule must still say exactly what was approved.
            let same = rule.caller == caller
                && rule.profile == profile
                && rule.tool == tool
                && rule.args_sha256 == hash;
            Ok((same && risk <= rule.risk && rule.expires_at_ms > (self.clock)()).then_some(rule))
        })
    }

    /// Records `approved` as a rule lasting `period`, and audits it.
    ///
    /// # Errors
    /// The store could not be written; nothing was audited.
    pub fn remember<'a>(
        &'a self,
        approved: Approved<'a>,
        period: Duration,
    ) -> BoxFuture<'a, Result<RememberedRule, RuleStoreError>> {
        Box::pin(async move {
            let hash = args_sha256(approved.args);
            let now = (self.clock)();
            let period_ms = u64::try_from(period.as_millis()).unwrap_or(u64::MAX);
            let rule = RememberedRule {
                id: RememberedRule::id_of(approved.caller, approved.profile, approved.tool, &hash),
                caller: approved.caller.to_string(),
                profile: approved.profile.to_string(),
                tool: approved.tool.to_string(),
                args_sha256: hash,
                risk: approved.risk,
                created_at: crate::rfc3339_utc(UNIX_EPOCH + Duration::from_millis(now)),
                created_at_ms: now,
                expires_at_ms: now.saturating_add(period_ms),
                upstream: approved.upstream,
                approved_by: approved.approved_by.clone(),
                approved_with: approved.approved_with,
                channel: approved.channel,
            };
            self.store.put(&rule, period).await?;
            self.audit(rule.audit_record(
                RuleAction::Created,
                approved.approved_by,
                approved.channel.as_str(),
            ));
            Ok(rule)
        })
    }

    /// The time now on the clock rules are read against, in milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> u64 {
        (self.clock)()
    }

    /// The live rule `id`, if any.
    ///
    /// # Errors
    /// The store could not be read.
    pub fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<RememberedRule>, RuleStoreError>> {
        Box::pin(async move {
            if !is_rule_id(id) {
                return Ok(None);
            }
            let now = (self.clock)();
            Ok(self
                .store
                .get(id)
                .await?
                .filter(|rule| rule.expires_at_ms > now))
        })
    }

    /// The rules not yet expired, oldest first.
    ///
    /// # Errors
    /// The store could not be read.
    pub fn list<'a>(&'a self) -> BoxFuture<'a, Result<Vec<RememberedRule>, RuleStoreError>> {
        Box::pin(async move {
            let now = (self.clock)();
            let mut rules: Vec<RememberedRule> = self
                .store
                .list()
                .await?
                .into_iter()
                .filter(|r| r.expires_at_ms > now)
                .collect();
            rules.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
            Ok(rules)
        })
    }

    /// Revokes the rule `id` (by `by`, through `channel`: `http`, `cli`), and audits it; `None`
    /// when there is no such live rule.
    ///
    /// # Errors
    /// The store could not be read or written.
    pub fn revoke<'a>(
        &'a self,
        id: &'a str,
        by: Option<String>,
        channel: &'a str,
    ) -> BoxFuture<'a, Result<Option<RememberedRule>, RuleStoreError>> {
        Box::pin(async move {
            if !is_rule_id(id) {
                return Ok(None);
            }
            let Some(rule) = self.store.get(id).await? else {
                return Ok(None);
            };
            if !self.store.delete(id).await? || rule.expires_at_ms <= (self.clock)() {
                return Ok(None);
            }
            self.audit(rule.audit_record(RuleAction::Revoked, by, channel));
            Ok(Some(rule))
        })
    }
}

/// What identifies the upstream of `tool` in `config`: the SHA-256 of how it is reached — for
/// a server's tool (`server__tool`), a stdio server's command, arguments and working
/// directory, or an HTTP server's URL; for a command tool (`commands`), its program, argv
/// template and working directory — so that a reload giving the name to another upstream or
/// program changes it, while one that only rotates its environment or headers (credentials)
/// does not. `None` for a tool of neither (codemode's own).
pub(crate) fn upstream_identity(config: &crate::Config, tool: &str) -> Option<String> {
    if let Some(command) = config.commands.get(tool) {
        return Some(command_identity(command));
    }
    let (server, _) = tool.split_once("__")?;
    let spec = match &config.servers.get(server)?.transport {
        codemode_config::ServerTransport::Stdio {
            command, args, cwd, ..
        } => json!({"command": command, "args": args, "cwd": cwd}),
        codemode_config::ServerTransport::Http { url, .. } => json!({"url": url}),
    };
    Some(sha256_hex(canonical_json(&spec).as_bytes())[..32].to_string())
}

/// What identifies a command tool: its program, argv template (each element a literal or a
/// placeholder with its flags) and working directory.
fn command_identity(command: &codemode_config::CommandConfig) -> String {
    let args: Vec<Value> = command
        .args
        .iter()
        .map(|arg| match arg {
            codemode_config::CommandArg::Literal(text) => json!({"literal": text}),
            codemode_config::CommandArg::Param {
                name,
                optional,
                allow_option,
            } => json!({"param": name, "optional": optional, "allowOption": allow_option}),
        })
        .collect();
    let spec =
        json!({"kind": "command", "command": command.command, "args": args, "cwd": command.cwd});
    sha256_hex(canonical_json(&spec).as_bytes())[..32].to_string()
}

/// Whether `id` has the form of a rule id (32 lowercase hex digits): anything else names no
/// rule, and never reaches a store key.
pub fn is_rule_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl crate::Config {
    /// What identifies the upstream server of `tool` (`server__tool`): the SHA-256 of how it
    /// is reached — a stdio server's command, arguments and working directory, an HTTP
    /// server's URL — so that a reload giving the name to another upstream changes it, while
    /// one that only rotates its environment or headers (credentials) does not. `None` for a
    /// tool of no configured server. Remembered approvals cover a call only while it is the
    /// same ([`RememberedRule::covers`]).
    pub fn upstream_identity(&self, tool: &str) -> Option<String> {
        upstream_identity(self, tool)
    }
}

impl crate::RiskPolicy {
    /// Its `rememberFor` as the approval form states it, in its largest whole unit (`7 days`,
    /// `1 hour`, `90 seconds`); `None` when the level remembers no approval.
    pub fn remember_for_spelled(&self) -> Option<String> {
        self.remember_for.map(spell_period)
    }
}

/// A period as the approval form states it, in its largest whole unit: `7 days`, `1 hour`,
/// `90 seconds`.
pub(crate) fn spell_period(period: Duration) -> String {
    let s = period.as_secs();
    let (n, unit) = match s {
        0 => return format!("{} ms", period.as_millis()),
        s if s.is_multiple_of(86_400) => (s / 86_400, "day"),
        s if s.is_multiple_of(3600) => (s / 3600, "hour"),
        s if s.is_multiple_of(60) => (s / 60, "minute"),
        s => (s, "second"),
    };
    let plural = if n == 1 { "" } else { "s" };
    format!("{n} {unit}{plural}")
}

#[cfg(test)]
mod tests;
