//! Profiles: named sets of lists and rules that decide, per tool call, whether the call is
//! allowed, denied, or needs a human's approval. See [`Profile::disposition`].

mod disposition;
mod globs;
mod paths;
mod summary;
mod verdict;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::{Caller, Risk, RiskPolicy};

pub(crate) use disposition::TOOL_ALIASES;
pub(crate) use globs::{Access, GlobList};
pub use paths::{PathCondition, PathValue, normalize as normalize_path};
pub use verdict::{Disposition, DispositionKind, MatchedBy};

/// What an `ask` becomes when no human can be asked (the client does not support elicitation,
/// or the CLI is not interactive): `elicitationFallback` in the configuration.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// Deny the call (reason `elicitation_unsupported`). The default.
    #[default]
    Deny,
    /// Let the call through.
    Allow,
}

/// The fallback `codemode_config` read from the file.
impl From<codemode_config::Fallback> for Fallback {
    fn from(fallback: codemode_config::Fallback) -> Fallback {
        match fallback {
            codemode_config::Fallback::Deny => Fallback::Deny,
            codemode_config::Fallback::Allow => Fallback::Allow,
        }
    }
}

/// The default of `approvalTimeoutSeconds`: 60 seconds.
pub(crate) const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(60);
/// The default of `maxPendingApprovals`: 4.
pub(crate) const DEFAULT_MAX_PENDING_APPROVALS: usize = 4;

/// A named policy, as configured under `evaluation.profiles.<name>`.
///
/// Built by [`crate::Config::from_json_str`] (or [`Profile::from_json`]); immutable and cheap
/// to share behind an `Arc`.
#[derive(Debug, Clone)]
pub struct Profile {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) allowlist: Option<GlobList>,
    pub(crate) denylist: GlobList,
    pub(crate) asklist: GlobList,
    pub(crate) rules: Vec<Rule>,
    pub(crate) elicitation_fallback: Fallback,
    pub(crate) approval_timeout: Duration,
    pub(crate) max_pending_approvals: usize,
    pub(crate) default_disposition: DispositionKind,
    pub(crate) require_permissions: Vec<String>,
    /// The `risk` map's globs, in written order, and the level of each.
    pub(crate) risk_globs: GlobList,
    pub(crate) risk_levels: Vec<Risk>,
    pub(crate) default_risk: Risk,
    pub(crate) risk_policies: BTreeMap<Risk, RiskPolicy>,
    pub(crate) resources: Access,
    pub(crate) prompts: Access,
    pub(crate) sampling: DispositionKind,
    pub(crate) approval_diffs: BTreeMap<String, ApprovalDiff>,
}

/// How an approval prompt shows a write as a diff (`approvalDiffs.<tool>`): the current content
/// is read with the tool `read`, called with `{ <path>: <the write's path argument> }`, and
/// compared with the write's `content` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalDiff {
    /// The tool that reads the current content.
    pub read: String,
    /// The argument naming the file, in both tools.
    pub path: String,
    /// The write's argument holding the new content.
    pub content: String,
}

impl Profile {
    /// The default of `approvalTimeoutSeconds`: 60 seconds.
    pub const DEFAULT_APPROVAL_TIMEOUT: Duration = DEFAULT_APPROVAL_TIMEOUT;
    /// The default of `maxPendingApprovals`: 4.
    pub const DEFAULT_MAX_PENDING_APPROVALS: usize = DEFAULT_MAX_PENDING_APPROVALS;

    /// The profile's name (its key under `evaluation.profiles`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The operator's own words about the profile (`description`), if any: shown to models in
    /// its eval tool's description, before [`Profile::summary`].
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The `allowlist` globs; `None` when the profile has no allowlist (everything not denied
    /// or asked is allowed).
    pub fn allowlist(&self) -> Option<&[String]> {
        self.allowlist.as_ref().map(GlobList::globs)
    }

    /// Whether the profile lets the session list and read, and scripts read, the upstream
    /// resource `<server>__<original URI>` (its `resources`; default: every one).
    pub fn lets_resource(&self, qualified: &str) -> bool {
        self.resources.lets(qualified)
    }

    /// Whether the profile lets the session list and get the upstream prompt
    /// `<server>__<prompt name>` (its `prompts`; default: every one).
    pub fn lets_prompt(&self, qualified: &str) -> bool {
        self.prompts.lets(qualified)
    }

    /// What an upstream's `sampling/createMessage` during a script's call gets (`sampling`;
    /// default [`DispositionKind::Ask`]: a human approves each request, or the profile's
    /// [`elicitation_fallback`](Self::elicitation_fallback) decides when nobody can be asked).
    pub fn sampling(&self) -> DispositionKind {
        self.sampling
    }

    /// How the approval prompt of `tool` shows its write as a diff (`approvalDiffs`), if the
    /// profile says so.
    pub fn approval_diff(&self, tool: &str) -> Option<&ApprovalDiff> {
        self.approval_diffs.get(tool)
    }

    /// The `denylist` globs (default: none).
    pub fn denylist(&self) -> &[String] {
        self.denylist.globs()
    }

    /// The `asklist` globs (default: none).
    pub fn asklist(&self) -> &[String] {
        self.asklist.globs()
    }

    /// The `rules`, in order (default: none).
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// What an `ask` becomes when nobody can be asked (default: [`Fallback::Deny`]).
    pub fn elicitation_fallback(&self) -> Fallback {
        self.elicitation_fallback
    }

    /// How long a human has to answer an approval prompt before the call is denied (default:
    /// [`Profile::DEFAULT_APPROVAL_TIMEOUT`]).
    pub fn approval_timeout(&self) -> Duration {
        self.approval_timeout
    }

    /// How many approvals may be pending at once in one eval before further asks are denied
    /// (default: [`Profile::DEFAULT_MAX_PENDING_APPROVALS`]).
    pub fn max_pending_approvals(&self) -> usize {
        self.max_pending_approvals
    }

    /// What a call no list or rule matches gets (`defaultDisposition`; default:
    /// [`DispositionKind::Allow`]). Not used when the profile has an `allowlist`: a call it
    /// does not match is denied.
    pub fn default_disposition(&self) -> DispositionKind {
        self.default_disposition
    }

    /// The permissions a caller needs to run scripts under this profile at all
    /// (`requirePermissions`; default: none). The host hides the profile's eval tool from a
    /// caller lacking one and refuses it; see [`Profile::missing_permissions`].
    pub fn required_permissions(&self) -> &[String] {
        &self.require_permissions
    }

    /// The permissions of [`Profile::required_permissions`] that `caller` lacks, in written
    /// order: empty when the caller may use the profile.
    ///
    /// ```
    /// use codemode_policies::{Caller, Profile};
    /// let p = Profile::from_json("pay", &serde_json::json!({"requirePermissions": ["payments"]})).unwrap();
    /// assert_eq!(p.missing_permissions(&Caller::local()), ["payments"]);
    /// assert!(p.missing_permissions(&Caller::new("ci", ["payments"])).is_empty());
    /// ```
    pub fn missing_permissions(&self, caller: &Caller) -> Vec<&str> {
        caller.missing(&self.require_permissions)
    }

    /// The `risk` map: tool-name globs and their levels, in written order (default: none).
    pub fn risk_globs(&self) -> impl Iterator<Item = (&str, Risk)> {
        self.risk_globs
            .globs()
            .iter()
            .map(String::as_str)
            .zip(self.risk_levels.iter().copied())
    }

    /// The risk of a call nothing else classifies (`defaultRisk`; default: [`Risk::Medium`]).
    pub fn default_risk(&self) -> Risk {
        self.default_risk
    }

    /// What a human may answer to an ask of `risk` (`riskPolicies.<risk>`; default:
    /// [`RiskPolicy::default`], everything allowed with the profile's approval timeout).
    pub fn risk_policy(&self, risk: Risk) -> RiskPolicy {
        self.risk_policies.get(&risk).cloned().unwrap_or_default()
    }

    /// How long a human has to answer an ask of `risk`: the risk policy's
    /// `approvalTimeoutSeconds` when it sets one, else [`Profile::approval_timeout`].
    pub(crate) fn approval_timeout_for(&self, risk: Risk) -> Duration {
        self.risk_policy(risk)
            .approval_timeout
            .unwrap_or(self.approval_timeout)
    }
}

/// One entry of a profile's `rules`: when the called name matches one of `tools`, every `when`
/// condition and every `whenPath` condition holds on the call's arguments, the rule decides the
/// call.
#[derive(Debug, Clone)]
pub struct Rule {
    pub(crate) tools: GlobList,
    pub(crate) when: Vec<Condition>,
    pub(crate) when_path: Vec<PathCondition>,
    pub(crate) base: Option<String>,
    pub(crate) disposition: DispositionKind,
    pub(crate) reason: Option<String>,
    pub(crate) require_permissions: Vec<String>,
    pub(crate) risk: Option<Risk>,
}

impl Rule {
    /// The tool-name globs (at least one).
    pub fn tools(&self) -> &[String] {
        self.tools.globs()
    }

    /// The argument conditions, all of which must hold (default: none, i.e. any arguments).
    pub fn when(&self) -> &[Condition] {
        &self.when
    }

    /// The path conditions (`whenPath`), all of which must hold (default: none).
    pub fn when_path(&self) -> &[PathCondition] {
        &self.when_path
    }

    /// The absolute directory relative `whenPath` values are resolved against (`base`); without
    /// one, a relative path fails closed.
    pub fn base(&self) -> Option<&str> {
        self.base.as_deref()
    }

    /// Whether the rule looks at the arguments at all (`when` or `whenPath`).
    pub fn depends_on_args(&self) -> bool {
        !self.when.is_empty() || !self.when_path.is_empty()
    }

    /// What the rule decides.
    pub fn disposition(&self) -> DispositionKind {
        self.disposition
    }

    /// The human-readable reason, shown in approval prompts and denial messages.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// The permissions a caller needs for the calls this rule matches (`requirePermissions`;
    /// default: none). A caller lacking one is denied with reason `permission`, whatever the
    /// rule's disposition.
    pub fn required_permissions(&self) -> &[String] {
        &self.require_permissions
    }

    /// The risk of the calls this rule matches (`risk`), if the rule sets one.
    pub fn risk(&self) -> Option<Risk> {
        self.risk
    }

    /// The rule's content as one string (globs, conditions, disposition, reason, permissions,
    /// risk): two rules with the same fingerprint decide alike. Approvals remembered for a rule
    /// are bound to it, so that a reload putting another rule at the same index does not
    /// inherit them.
    pub fn fingerprint(&self) -> String {
        let when: Vec<(&str, &str)> = self
            .when
            .iter()
            .map(|c| (c.pointer.as_str(), c.regex.as_str()))
            .collect();
        let when_path: Vec<(&str, &[String])> = self
            .when_path
            .iter()
            .map(|c| (c.pointer(), c.globs()))
            .collect();
        format!(
            "{:?}|{:?}|{:?}|{:?}|{}|{:?}|{:?}|{:?}",
            self.tools.globs(),
            when,
            when_path,
            self.base,
            self.disposition,
            self.reason,
            self.require_permissions,
            self.risk
        )
    }

    /// Whether one of the rule's `tools` globs matches `tool` (its `when` conditions aside).
    pub fn matches_tool(&self, tool: &str) -> bool {
        self.tools.first_match(tool).is_some()
    }

    /// Whether this rule decides a call of `tool` with `args`. A `whenPath` value that is not
    /// an absolute path once resolved ([`PathValue::Unjudgeable`]) fails closed: a rule that
    /// denies or asks applies, one that allows does not.
    pub fn matches(&self, tool: &str, args: &Value) -> bool {
        let fail_closed = self.disposition != DispositionKind::Allow;
        self.tools.first_match(tool).is_some()
            && self.when.iter().all(|c| c.matches(args))
            && self
                .when_path
                .iter()
                .all(|c| c.matches(args, self.base.as_deref(), fail_closed))
    }
}

/// One `when` entry of a [`Rule`]: a JSON Pointer into the call's arguments and a regex the
/// value there must match.
#[derive(Debug, Clone)]
pub struct Condition {
    pub(crate) pointer: String,
    pub(crate) regex: regex::Regex,
}

impl Condition {
    /// The JSON Pointer (RFC 6901): `""` for the whole arguments value, else `/a/0/b`.
    pub fn pointer(&self) -> &str {
        &self.pointer
    }

    /// The regex, unanchored unless it says otherwise (`^…$`).
    pub fn regex(&self) -> &str {
        self.regex.as_str()
    }

    /// Whether the value at the pointer matches the regex. Strings are matched as they are;
    /// numbers, booleans and `null` as their JSON text (`42`, `1.5`, `true`, `null`); arrays and
    /// objects as their compact JSON text. A pointer that leads nowhere does not match.
    pub fn matches(&self, args: &Value) -> bool {
        match args.pointer(&self.pointer) {
            None => false,
            Some(Value::String(s)) => self.regex.is_match(s),
            Some(other) => self.regex.is_match(&other.to_string()),
        }
    }
}
