//! What a profile decides for one call ([`Disposition`]), as [`Profile::disposition`] returns
//! it and the audit log records it.
//!
//! [`Profile::disposition`]: super::Profile::disposition

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Risk;

/// What to do with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DispositionKind {
    /// Call the tool.
    Allow,
    /// Refuse the call; the tool is never reached.
    Deny,
    /// Ask a human first.
    Ask,
}

/// The disposition `codemode_config` read from the file.
impl From<codemode_config::Disposition> for DispositionKind {
    fn from(disposition: codemode_config::Disposition) -> DispositionKind {
        match disposition {
            codemode_config::Disposition::Allow => DispositionKind::Allow,
            codemode_config::Disposition::Deny => DispositionKind::Deny,
            codemode_config::Disposition::Ask => DispositionKind::Ask,
        }
    }
}

impl DispositionKind {
    /// The lowercase name, as in the configuration and the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            DispositionKind::Allow => "allow",
            DispositionKind::Deny => "deny",
            DispositionKind::Ask => "ask",
        }
    }
}

impl fmt::Display for DispositionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which part of the profile decided, so that prompts and denial messages can say why.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// The rule at this 0-based index of `rules`.
    Rule(usize),
    /// This `denylist` glob.
    Denylist(String),
    /// This `asklist` glob.
    Asklist(String),
    /// The profile has an `allowlist` and no glob of it matches.
    NotInAllowlist,
    /// No rule, `denylist` or `asklist` matched (and, with an `allowlist`, the allowlist
    /// did), or there is no profile: the profile's `defaultDisposition` decided (always
    /// `allow` with an allowlist or without a profile).
    Default,
    /// The profile allowed the call, but its risk level's policy asks about every call of that
    /// level (`riskPolicies.<level>.requireApproval`).
    RequireApproval(Risk),
}

impl fmt::Display for MatchedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchedBy::Rule(i) => write!(f, "rules[{i}]"),
            MatchedBy::Denylist(g) => write!(f, "denylist glob `{g}`"),
            MatchedBy::Asklist(g) => write!(f, "asklist glob `{g}`"),
            MatchedBy::NotInAllowlist => f.write_str("not in the allowlist"),
            MatchedBy::Default => f.write_str("no list or rule matched"),
            MatchedBy::RequireApproval(risk) => {
                write!(f, "riskPolicies.{risk}.requireApproval")
            }
        }
    }
}

/// The decision for one call, with what decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Disposition {
    /// Allow, deny or ask.
    pub kind: DispositionKind,
    /// What decided.
    pub matched: MatchedBy,
    /// The deciding rule's `reason`, if a rule decided and it has one.
    pub reason: Option<String>,
    /// The call's risk (see [`Profile::disposition`](super::Profile::disposition));
    /// [`Risk::Medium`] without a profile.
    pub risk: Risk,
    /// The permissions the deciding rule requires (`requirePermissions`; empty when no rule
    /// decided). A caller lacking one is denied with reason `permission`.
    pub required_permissions: Vec<String>,
}

impl Disposition {
    /// The disposition of every call when no profile is bound: allowed.
    pub fn unrestricted() -> Self {
        Disposition {
            kind: DispositionKind::Allow,
            matched: MatchedBy::Default,
            reason: None,
            risk: Risk::default(),
            required_permissions: Vec::new(),
        }
    }
}
