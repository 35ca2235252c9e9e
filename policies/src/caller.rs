//! [`Caller`]: who an eval runs for.

use std::collections::BTreeSet;

/// The permission a caller needs for a destructive call ([`crate::Class::Destructive`]). The
/// local caller (stdio, `codemode run`, unauthenticated loopback HTTP) holds it unless
/// `evaluation.localAllowDestructive` is `false`; an HTTP caller only when its token or JWT
/// grants it.
pub(crate) const ALLOW_DESTRUCTIVE: &str = "allow_destructive";

/// Who an eval runs for: a name and the permissions it was granted.
///
/// Local entry points (the CLI, a stdio server, unauthenticated loopback HTTP) run for
/// [`Caller::local`]; an authenticated HTTP request runs for its token's name or its JWT's `sub`,
/// with the permissions the token grants. Profiles and rules may require permissions, approvals
/// are bound to the caller, and the audit log names it.
///
/// ```
/// use codemode_policies::Caller;
/// let ci = Caller::new("ci", ["payments"]);
/// assert!(ci.has_permission("payments"));
/// assert!(!Caller::local().has_permission("payments"));
/// assert_eq!(Caller::local().name, "local");
/// assert!(Caller::local().has_permission(Caller::ALLOW_DESTRUCTIVE));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Caller {
    /// How the caller is named in prompts, logs and audit records.
    pub name: String,
    /// What the caller may do beyond running scripts under unrestricted profiles.
    pub permissions: BTreeSet<String>,
}

impl Caller {
    /// The permission a caller needs for a destructive call (`allow_destructive`): see
    /// [`Caller::local`] for who holds it.
    pub const ALLOW_DESTRUCTIVE: &str = ALLOW_DESTRUCTIVE;

    /// The name of [`Caller::local`].
    pub const LOCAL: &'static str = codemode_config::LOCAL_CALLER;

    /// A caller named `name` with `permissions`.
    pub fn new<I, S>(name: impl Into<String>, permissions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Caller {
            name: name.into(),
            permissions: permissions.into_iter().map(Into::into).collect(),
        }
    }

    /// The user of this machine: `"local"`, with one permission,
    /// [`Caller::ALLOW_DESTRUCTIVE`]: whoever runs codemode on their own
    /// machine can run the tools by hand anyway, so destructive calls are theirs to make
    /// (unless `evaluation.localAllowDestructive` is `false`). An HTTP caller gets only what
    /// its token or JWT grants.
    pub fn local() -> Self {
        Caller::new(Self::LOCAL, [ALLOW_DESTRUCTIVE])
    }

    /// Whether the caller holds `permission`.
    pub fn has_permission(&self, permission: &str) -> bool {
        self.permissions.contains(permission)
    }

    /// The permissions of `required` the caller lacks, in order.
    pub fn missing<'a>(&self, required: &'a [String]) -> Vec<&'a str> {
        required
            .iter()
            .filter(|p| !self.has_permission(p))
            .map(String::as_str)
            .collect()
    }
}

impl Default for Caller {
    fn default() -> Self {
        Caller::local()
    }
}
