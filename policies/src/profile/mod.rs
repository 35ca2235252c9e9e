//! Profiles: named sets of lists and rules that decide, per tool call, whether the call is
//! allowed, denied, or needs a human's approval. See [`Profile::disposition`].

mod disposition;
mod globs;

use std::time::Duration;

use serde_json::Value;

pub use disposition::{Disposition, DispositionKind, MatchedBy};
pub(crate) use globs::GlobList;

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

/// The default of `approvalTimeoutSeconds`: 60 seconds.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(60);
/// The default of `maxPendingApprovals`: 4.
pub const DEFAULT_MAX_PENDING_APPROVALS: usize = 4;

/// A named policy, as configured under `evaluation.profiles.<name>`.
///
/// Built by [`crate::Config::from_json_str`] (or [`Profile::from_json`]); immutable and cheap
/// to share behind an `Arc`.
#[derive(Debug, Clone)]
pub struct Profile {
    pub(crate) name: String,
    pub(crate) allowlist: Option<GlobList>,
    pub(crate) denylist: GlobList,
    pub(crate) asklist: GlobList,
    pub(crate) rules: Vec<Rule>,
    pub(crate) elicitation_fallback: Fallback,
    pub(crate) approval_timeout: Duration,
    pub(crate) max_pending_approvals: usize,
}

impl Profile {
    /// Builds a profile from the JSON of one profile entry (the value of
    /// `evaluation.profiles.<name>`), for embedding without a configuration file. Error paths
    /// are relative to that value.
    ///
    /// # Errors
    ///
    /// Every problem found (see [`crate::Config::from_json_str`]).
    pub fn from_json(name: &str, value: &Value) -> Result<Profile, crate::ConfigErrors> {
        crate::config::profile_from_json(name, value)
    }

    /// The profile's name (its key under `evaluation.profiles`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The `allowlist` globs; `None` when the profile has no allowlist (everything not denied
    /// or asked is allowed).
    pub fn allowlist(&self) -> Option<&[String]> {
        self.allowlist.as_ref().map(GlobList::globs)
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
    /// [`DEFAULT_APPROVAL_TIMEOUT`]).
    pub fn approval_timeout(&self) -> Duration {
        self.approval_timeout
    }

    /// How many approvals may be pending at once in one eval before further asks are denied
    /// (default: [`DEFAULT_MAX_PENDING_APPROVALS`]).
    pub fn max_pending_approvals(&self) -> usize {
        self.max_pending_approvals
    }
}

/// One entry of a profile's `rules`: when the called name matches one of `tools` and every
/// `when` condition holds on the call's arguments, the rule decides the call.
#[derive(Debug, Clone)]
pub struct Rule {
    pub(crate) tools: GlobList,
    pub(crate) when: Vec<Condition>,
    pub(crate) disposition: DispositionKind,
    pub(crate) reason: Option<String>,
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

    /// What the rule decides.
    pub fn disposition(&self) -> DispositionKind {
        self.disposition
    }

    /// The human-readable reason, shown in approval prompts and denial messages.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// Whether this rule decides a call of `tool` with `args`.
    pub fn matches(&self, tool: &str, args: &Value) -> bool {
        self.tools.first_match(tool).is_some() && self.when.iter().all(|c| c.matches(args))
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
