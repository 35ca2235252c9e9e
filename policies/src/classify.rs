//! Tool classification (`evaluation.classification`): every tool is [`Class::Read`],
//! [`Class::Write`] or [`Class::Destructive`], and a destructive call needs the caller's
//! [`ALLOW_DESTRUCTIVE`] permission.
//!
//! A tool's class comes from, in order:
//! 1. the config's globs: a tool matching globs of several classes gets the most restrictive
//!    (destructive > write > read), so that a broad `read` glob can never make a tool named by
//!    a `destructive` one harmless;
//! 2. the upstream's annotations ([`Class::from_annotations`]): `readOnlyHint` → read,
//!    `destructiveHint` → destructive, anything else → write;
//! 3. otherwise write: an upstream tool without annotations, a command tool. (MCP's default
//!    annotations would make every such tool destructive, and deny it to every HTTP caller
//!    not granted [`ALLOW_DESTRUCTIVE`]; write is what a tool that says nothing is taken for.)
//!
//! ```
//! use codemode_policies::{Class, Config};
//! let config = Config::from_json_str(r#"{"evaluation": {"classification": {
//!     "read": ["fs__*"], "destructive": ["fs__delete*"]}}}"#)?;
//! let classes = &config.evaluation.classification;
//! assert_eq!(classes.class_of("fs__read", None), Class::Read);
//! // Both globs match: the most restrictive class wins.
//! assert_eq!(classes.class_of("fs__delete_tree", Some(Class::Read)), Class::Destructive);
//! // Not named by the config: the annotations, else write.
//! assert_eq!(classes.class_of("gh__merge", Some(Class::Destructive)), Class::Destructive);
//! assert_eq!(classes.class_of("gh__comment", None), Class::Write);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::profile::GlobList;
use crate::{ALLOW_DESTRUCTIVE, Caller};

/// What a tool does to the world it reaches.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Only reads.
    Read,
    /// Changes something; what a tool nobody classified is taken for.
    #[default]
    Write,
    /// Changes something irreversibly: needs [`Caller::ALLOW_DESTRUCTIVE`](crate::Caller::ALLOW_DESTRUCTIVE).
    Destructive,
}

impl Class {
    /// Every class, least restrictive first.
    pub const ALL: [Class; 3] = [Class::Read, Class::Write, Class::Destructive];

    /// `read`, `write` or `destructive`.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Read => "read",
            Class::Write => "write",
            Class::Destructive => "destructive",
        }
    }

    /// The class an upstream's tool annotations say: `readOnlyHint: true` → read (whatever
    /// else it says: a tool that only reads destroys nothing), else `destructiveHint: true` →
    /// destructive, else write. MCP's defaults (`destructiveHint` true when absent) are not
    /// applied: a tool that says nothing is write.
    pub fn from_annotations(read_only: Option<bool>, destructive: Option<bool>) -> Class {
        match (read_only, destructive) {
            (Some(true), _) => Class::Read,
            (_, Some(true)) => Class::Destructive,
            _ => Class::Write,
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `evaluation.classification` globs and `evaluation.localAllowDestructive`. The default
/// names no tool (every tool's class comes from its annotations) and lets the local caller
/// make destructive calls.
#[derive(Debug, Clone)]
pub struct Classification {
    globs: [GlobList; 3],
    local_allow_destructive: bool,
}

impl Default for Classification {
    fn default() -> Self {
        Classification {
            globs: Default::default(),
            local_allow_destructive: true,
        }
    }
}

impl Classification {
    pub(crate) fn new(globs: [GlobList; 3], local_allow_destructive: bool) -> Self {
        Classification {
            globs,
            local_allow_destructive,
        }
    }

    /// The globs of `class`, as written (empty when the config gives none).
    pub fn globs(&self, class: Class) -> &[String] {
        self.globs[class as usize].globs()
    }

    /// Whether the local caller may make destructive calls (`localAllowDestructive`, default
    /// `true`).
    pub fn local_allows_destructive(&self) -> bool {
        self.local_allow_destructive
    }

    /// The class of `tool`: the most restrictive class whose globs match it; else
    /// `annotated` (from the upstream's annotations, [`Class::from_annotations`]); else write.
    pub fn class_of(&self, tool: &str, annotated: Option<Class>) -> Class {
        Class::ALL
            .into_iter()
            .rev()
            .find(|c| self.globs[*c as usize].first_index(tool).is_some())
            .or(annotated)
            .unwrap_or_default()
    }

    /// Whether `caller` may make a call of `class`: anything but a destructive call, which
    /// needs [`Caller::ALLOW_DESTRUCTIVE`](crate::Caller::ALLOW_DESTRUCTIVE). With `localAllowDestructive: false` the local caller's
    /// grant (see [`Caller::local`]) is not honoured.
    pub fn permits(&self, caller: &Caller, class: Class) -> bool {
        if class != Class::Destructive {
            return true;
        }
        if !self.local_allow_destructive && *caller == Caller::local() {
            return false;
        }
        caller.has_permission(ALLOW_DESTRUCTIVE)
    }

    /// The permissions of `caller` that count, sorted: its own, without [`ALLOW_DESTRUCTIVE`]
    /// when [`permits`](Self::permits) does not honour it (the local caller under
    /// `localAllowDestructive: false`). What the audit records as `caller_permissions`.
    pub(crate) fn permissions_of(&self, caller: &Caller) -> Vec<String> {
        let withdrawn = !self.permits(caller, Class::Destructive);
        caller
            .permissions
            .iter()
            .filter(|p| !(withdrawn && p.as_str() == ALLOW_DESTRUCTIVE))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(list: &[&str]) -> GlobList {
        GlobList::new(list.iter().map(|s| s.to_string()).collect()).unwrap()
    }

    /// Annotations: readOnlyHint wins over destructiveHint; nothing said is write (not MCP's
    /// destructive default).
    #[test]
    fn annotations_decide_the_class_as_documented() {
        let cases = [
            (None, None, Class::Write),
            (Some(true), None, Class::Read),
            (Some(true), Some(true), Class::Read),
            (Some(false), None, Class::Write),
            (Some(false), Some(true), Class::Destructive),
            (None, Some(true), Class::Destructive),
            (None, Some(false), Class::Write),
        ];
        for (read_only, destructive, want) in cases {
            assert_eq!(
                Class::from_annotations(read_only, destructive),
                want,
                "{read_only:?} {destructive:?}"
            );
        }
    }

    /// Config globs override annotations; two classes' globs matching: the most restrictive.
    #[test]
    fn config_globs_override_and_the_most_restrictive_wins() {
        let c = Classification::new(
            [
                globs(&["fs__*", "shell__run"]),
                globs(&["shell__*"]),
                globs(&["fs__rm*"]),
            ],
            true,
        );
        assert_eq!(
            c.class_of("fs__read", Some(Class::Destructive)),
            Class::Read
        );
        assert_eq!(
            c.class_of("fs__rmdir", Some(Class::Read)),
            Class::Destructive
        );
        assert_eq!(c.class_of("shell__run", None), Class::Write);
        assert_eq!(c.class_of("other", Some(Class::Read)), Class::Read);
        assert_eq!(c.class_of("other", None), Class::Write);
        assert_eq!(c.globs(Class::Write), ["shell__*"]);
    }

    /// Only a destructive call needs the permission; the local caller holds it unless the
    /// config withdraws it; a token that happens to be named `local` gets nothing from it.
    #[test]
    fn destructive_calls_need_the_permission() {
        let on = Classification::default();
        let off = Classification::new(Default::default(), false);
        let token = Caller::new("ci", ["deploy"]);
        let granted = Caller::new("ops", [ALLOW_DESTRUCTIVE]);
        let named_local = Caller::new(Caller::LOCAL, ["deploy"]);
        for class in [Class::Read, Class::Write] {
            assert!(on.permits(&token, class) && off.permits(&Caller::local(), class));
        }
        assert!(!on.permits(&token, Class::Destructive));
        assert!(!on.permits(&named_local, Class::Destructive));
        assert!(on.permits(&granted, Class::Destructive));
        assert!(off.permits(&granted, Class::Destructive));
        assert!(on.permits(&Caller::local(), Class::Destructive));
        assert!(!off.permits(&Caller::local(), Class::Destructive));
    }

    /// What the audit records of a caller's permissions: sorted, and the local caller's
    /// `allow_destructive` only while the config honours it.
    #[test]
    fn the_permissions_that_count() {
        let on = Classification::default();
        let off = Classification::new(Default::default(), false);
        let ops = Caller::new("ops", ["refunds", ALLOW_DESTRUCTIVE, "deploy"]);
        let sorted = ["allow_destructive", "deploy", "refunds"];
        assert_eq!(
            (on.permissions_of(&ops), off.permissions_of(&ops)),
            (
                sorted.map(String::from).to_vec(),
                sorted.map(String::from).to_vec()
            )
        );
        assert_eq!(on.permissions_of(&Caller::local()), [ALLOW_DESTRUCTIVE]);
        assert_eq!(off.permissions_of(&Caller::local()), Vec::<String>::new());
    }
}
