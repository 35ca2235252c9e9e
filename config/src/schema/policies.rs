//! `evaluation` (profiles and their rules) and `outputs`: the sections `codemode_policies`
//! reads into its decision types.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

use crate::de::{missing, noted, refused};
use crate::error::ConfigErrorKind;

use super::conditions::{PathGlobs, Pattern, PointerMap};
use super::leaves::{
    Approvers, Description, Filled, Glob, Globs, Permissions, RiskKey, RiskMap, one_of,
};
use super::values::{
    Disposition, Indexed, Positive, Retry, RetryWith, Risk, Seconds, elements_of, schema_as,
};

/// Profiles and which one evals run under.
// The keys in the order they are read, which is the order of their errors.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Evaluation {
    /// The permissions a caller needs to use the base `eval` tool.
    pub(crate) eval_requires_permissions: Option<Permissions>,
    /// The profiles, by name (1 to 32 ASCII letters, digits or `_`).
    pub(crate) profiles: Option<Profiles>,
    /// The profile evals run under when none is requested. Default: none (unrestricted).
    pub(crate) default_profile: Option<String>,
    /// Whether the local caller (stdio, `codemode run`, unauthenticated loopback HTTP) may make
    /// destructive calls, as if granted `allow_destructive`. Default: true.
    pub(crate) local_allow_destructive: Option<bool>,
    /// Tool-name globs by class. A tool the globs do not name gets its class from the
    /// upstream's annotations (`readOnlyHint` → read, `destructiveHint` → destructive, else
    /// write); a tool without annotations (and a command tool) is write. Globs of several
    /// classes matching one tool: the most restrictive wins (destructive > write > read).
    pub(crate) classification: Option<Classification>,
}

/// Reads an [`Evaluation`] knowing the names of the profiles given (read or not), so that
/// `defaultProfile` is checked where it is read, after the profiles, as it always was.
#[derive(Clone, Copy)]
pub(crate) struct EvaluationSeed<'n> {
    /// Every profile's name, sorted.
    pub(crate) profiles: &'n [String],
}

impl<'de> DeserializeSeed<'de> for EvaluationSeed<'_> {
    type Value = Evaluation;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Evaluation, D::Error> {
        let keys = super::keys::of::<Evaluation>();
        d.deserialize_struct("Evaluation", keys, self)
    }
}

impl<'de> Visitor<'de> for EvaluationSeed<'_> {
    type Value = Evaluation;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Evaluation, A::Error> {
        let mut e = Evaluation {
            eval_requires_permissions: None,
            profiles: None,
            default_profile: None,
            local_allow_destructive: None,
            classification: None,
        };
        // The reader offers the known keys only (an unknown one is its error), in this order.
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "evalRequiresPermissions" => e.eval_requires_permissions = map.next_value()?,
                "profiles" => e.profiles = map.next_value()?,
                "defaultProfile" => {
                    e.default_profile = Some(map.next_value_seed(ProfileNamed(self.profiles))?);
                }
                "localAllowDestructive" => e.local_allow_destructive = map.next_value()?,
                "classification" => e.classification = map.next_value()?,
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(e)
    }
}

/// `defaultProfile`: the name of one of the profiles given.
struct ProfileNamed<'n>(&'n [String]);

impl<'de> DeserializeSeed<'de> for ProfileNamed<'_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        let name = String::deserialize(d)?;
        if self.0.contains(&name) {
            return Ok(name);
        }
        let have = if self.0.is_empty() {
            "none".to_string()
        } else {
            self.0.join(", ")
        };
        Err(refused(
            ConfigErrorKind::UnknownProfile,
            format!("no profile is called `{name}`; profiles: {have}"),
        ))
    }
}

/// `evaluation.profiles`: name → profile, in written order. A name that is not one is an
/// error at its profile, which is read all the same; a profile that cannot be read is `None`.
#[derive(Debug, Clone)]
pub(crate) struct Profiles(pub(crate) Vec<(String, Option<Profile>)>);

impl<'de> Deserialize<'de> for Profiles {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ProfilesVisitor)
    }
}

struct ProfilesVisitor;

impl<'de> Visitor<'de> for ProfilesVisitor {
    type Value = Profiles;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Profiles, A::Error> {
        let mut out = Vec::new();
        while let Some(name) = map.next_key::<String>()? {
            let profile = map.next_value_seed(RetryWith(NamedProfile(&name)))?;
            out.push((name, profile));
        }
        Ok(Profiles(out))
    }
}

/// A profile read under its name, the name checked first.
#[derive(Clone, Copy)]
struct NamedProfile<'n>(&'n str);

impl<'de> DeserializeSeed<'de> for NamedProfile<'_> {
    type Value = Profile;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Profile, D::Error> {
        match profile_name_problem(self.0) {
            None => Profile::deserialize(d),
            Some(problem) => noted(d, ConfigErrorKind::InvalidName, problem),
        }
    }
}

/// What is wrong with `name` as a profile's name (`^[A-Za-z0-9_]{1,32}$`): it names its eval
/// tool (`codemode_eval_<name>`).
pub(crate) fn profile_name_problem(name: &str) -> Option<String> {
    let valid = (1..=32).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (!valid)
        .then(|| format!("invalid profile name `{name}`: use 1 to 32 ASCII letters, digits or `_`"))
}

schema_as!(BTreeMap<String, Profile> => Profiles);

/// `evaluation.classification`: tool-name globs by class. A destructive call needs the
/// caller's `allow_destructive` permission.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Classification {
    /// Tools that only read.
    pub(crate) read: Option<Globs>,
    /// Tools that change something.
    pub(crate) write: Option<Globs>,
    /// Tools that change something irreversibly.
    pub(crate) destructive: Option<Globs>,
}

/// A profile: what the calls of an eval run under it may do. A call is decided in this order:
/// `denylist`, the first matching rule, `asklist`, `allowlist`, `defaultDisposition`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Profile {
    /// What the profile is for, in the operator's words (at most 500 characters), shown in its
    /// eval tool's description.
    pub(crate) description: Option<Description>,
    /// With it, a tool matching none of these globs is denied.
    pub(crate) allowlist: Option<Globs>,
    /// Tools always denied (no rule overrides it).
    pub(crate) denylist: Option<Globs>,
    /// Tools a human must approve.
    pub(crate) asklist: Option<Globs>,
    /// Rules on the call's arguments; the first that matches decides.
    pub(crate) rules: Option<Rules>,
    /// What an ask becomes when no human can be asked: `"deny"` (the default) or `"allow"`.
    pub(crate) elicitation_fallback: Option<Fallback>,
    /// How long a human has to answer. Default: 60.
    pub(crate) approval_timeout_seconds: Option<Seconds>,
    /// Most approvals waiting for a human at once in one eval; further asks wait for a slot, up
    /// to their approval timeout (then: `queue_timeout`). Default: 4.
    #[schemars(range(min = 1))]
    pub(crate) max_pending_approvals: Option<Positive>,
    /// What a call no list or rule matched gets. Default: `"allow"`.
    pub(crate) default_disposition: Option<Disposition>,
    /// The permissions a caller needs to use this profile.
    pub(crate) require_permissions: Option<Permissions>,
    /// Tool-name globs → risk level, tried in written order (the first match wins).
    pub(crate) risk: Option<RiskMap>,
    /// The risk of a call nothing else rates. Default: `"medium"`.
    pub(crate) default_risk: Option<Risk>,
    /// What a human may answer to a call of each risk level.
    pub(crate) risk_policies: Option<RiskPolicies>,
    /// Which upstream resources the session lists and reads, and scripts read, as globs over
    /// `<server>__<original URI>`. Default: all.
    pub(crate) resources: Option<Access>,
    /// Which upstream prompts the session lists and gets, as globs over `<server>__<prompt
    /// name>`. Default: all.
    pub(crate) prompts: Option<Access>,
    /// What an upstream server's request to sample the client's model (during a script's call)
    /// gets: `"allow"`, `"ask"` (a human approves each one) or `"deny"`. Default: `"ask"`.
    pub(crate) sampling: Option<Disposition>,
    /// Tools that write a file, by exact name → how to read the file first, so that the
    /// approval prompt shows the write as a diff. Default: none (no tool is read first).
    pub(crate) approval_diffs: Option<BTreeMap<String, ApprovalDiff>>,
}

/// How an approval prompt shows a write as a diff: the current content is read with `read`,
/// called with `{ <path>: <the write's path> }`, and compared with the write's `content`.
// Read through `ApprovalDiffFields`, below: a missing field is said in its own words.
#[derive(Debug, Clone, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ApprovalDiff {
    /// The tool that reads the current content (e.g. `filesystem__read_text_file`); its result
    /// is text, or an object whose `content` is text.
    pub(crate) read: String,
    /// The argument naming the file, in both tools (e.g. `path`).
    pub(crate) path: String,
    /// The write's argument holding the new content (e.g. `content`).
    pub(crate) content: String,
}

/// Which names of a kind a profile lets through: those matching `allow` (every one when it is
/// absent) and no `deny` glob.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Access {
    /// With it, a name matching none of these globs is hidden and refused.
    pub(crate) allow: Option<Globs>,
    /// Names always hidden and refused.
    pub(crate) deny: Option<Globs>,
}

/// `"deny"` or `"allow"`.
// Read with the wording of its own `Deserialize`, below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Fallback {
    /// The call is denied.
    Deny,
    /// The call runs.
    Allow,
}

/// A rule: when its `tools` match and every `when`/`whenPath` condition holds, `disposition`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Rule {
    /// The tools it applies to (at least one glob).
    // Each glob checked as it is read; what is missing or empty is said by the conversion,
    // as for an `outputs` rule.
    #[schemars(required)]
    pub(crate) tools: Option<Indexed<Glob>>,
    /// JSON Pointer into the arguments → a regex the value there must match.
    pub(crate) when: Option<PointerMap<Pattern>>,
    /// JSON Pointer into the arguments → absolute path globs the path there (normalised) must
    /// match.
    pub(crate) when_path: Option<PointerMap<PathGlobs>>,
    /// The absolute directory relative `whenPath` values are resolved against.
    pub(crate) base: Option<String>,
    /// What a matching call gets.
    #[schemars(with = "Disposition")]
    pub(crate) disposition: Option<Disposition>,
    /// Why, shown to the script and to the human asked.
    pub(crate) reason: Option<String>,
    /// Permissions the caller needs; a missing one denies the call.
    pub(crate) require_permissions: Option<Permissions>,
    /// The risk of a matching call.
    pub(crate) risk: Option<Risk>,
}

/// What a human may answer, by risk level.
// Read as a map of levels, its `Deserialize` in `leaves`.
#[derive(Debug, Clone, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RiskPolicies {
    /// For `low` calls.
    pub(crate) low: Option<RiskPolicy>,
    /// For `medium` calls.
    pub(crate) medium: Option<RiskPolicy>,
    /// For `high` calls.
    pub(crate) high: Option<RiskPolicy>,
    /// For `critical` calls.
    pub(crate) critical: Option<RiskPolicy>,
}

/// What a human may answer to a call of one risk level.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RiskPolicy {
    /// How long a human has to answer such a call.
    pub(crate) approval_timeout_seconds: Option<Seconds>,
    /// Whether "approve for the session" is offered.
    pub(crate) allow_session_approval: Option<bool>,
    /// Whether "approve for this eval" is offered.
    pub(crate) allow_eval_approval: Option<bool>,
    /// Whether the human must give a reason.
    pub(crate) require_reason: Option<bool>,
    /// The permissions of which a decider must hold one to decide such a call, on every
    /// channel (at least one). Default: anyone who may approve.
    #[schemars(length(min = 1))]
    pub(crate) approvers: Option<Approvers>,
    /// Whether every such call is asked about, even one the profile allows. Default false.
    pub(crate) require_approval: Option<bool>,
    /// How long "approve this call from now on" lasts (`"7d"`, `"12h"`): the answer is
    /// offered only where this is set, and records a rule allowing the same caller, profile,
    /// tool and arguments without asking until it expires.
    pub(crate) remember_for: Option<super::values::Duration>,
}

/// One `outputs` rule: in the results of the tools it names, keep only allowed fields, mask or
/// remove values.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutputRule {
    /// The tools it applies to (at least one glob).
    #[schemars(required)]
    pub(crate) tools: Option<Indexed<String>>,
    /// JSON Pointers (`*` for any key or index) whose values are masked.
    pub(crate) mask: Option<Indexed<String>>,
    /// JSON Pointers (`*` for any key or index) whose values are removed.
    pub(crate) redact: Option<Indexed<String>>,
    /// JSON Pointers (`*` for any key or index) of the only fields kept (with their subtrees
    /// and the structure leading to them); every other field is removed. Deny by default.
    pub(crate) allow: Option<Indexed<String>>,
    /// A result that breaks the tool's `outputSchema` fails the call (error `invalid_output`,
    /// the value not returned) instead of reaching the script with a warning. Default false.
    #[serde(rename = "strictSchema")]
    pub(crate) strict_schema: Option<bool>,
}

/// Read as a map of levels, not as a struct: a key that is no level is "an unknown risk level"
/// (not an unknown key), and a wrong policy is left out without failing the others.
impl<'de> Deserialize<'de> for RiskPolicies {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RiskPoliciesVisitor)
    }
}

struct RiskPoliciesVisitor;

impl<'de> Visitor<'de> for RiskPoliciesVisitor {
    type Value = RiskPolicies;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RiskPolicies, A::Error> {
        let mut out = RiskPolicies {
            low: None,
            medium: None,
            high: None,
            critical: None,
        };
        while let Some(RiskKey(level)) = map.next_key()? {
            let Retry(policy) = map.next_value::<Retry<RiskPolicy>>()?;
            let slot = match level {
                Risk::Low => &mut out.low,
                Risk::Medium => &mut out.medium,
                Risk::High => &mut out.high,
                Risk::Critical => &mut out.critical,
            };
            *slot = policy;
        }
        Ok(out)
    }
}

impl<'de> Deserialize<'de> for Fallback {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = [("deny", Fallback::Deny), ("allow", Fallback::Allow)];
        one_of(d, &names, "\"deny\" or \"allow\"")
    }
}

/// A profile's `rules`, each wrong one a `None` where it stood (its errors reported), so that
/// each other keeps its index.
#[derive(Debug, Clone)]
pub(crate) struct Rules(pub(crate) Vec<Option<Rule>>);

impl<'de> Deserialize<'de> for Rules {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        elements_of(d, "an array of rules").map(Rules)
    }
}

schema_as!(Vec<Rule> => Rules);

/// An [`ApprovalDiff`]'s keys as given: each a non-empty string.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApprovalDiffFields {
    read: Option<Filled>,
    path: Option<Filled>,
    content: Option<Filled>,
}

impl<'de> Deserialize<'de> for ApprovalDiff {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let fields = ApprovalDiffFields::deserialize(d)?;
        if let (Some(read), Some(path), Some(content)) =
            (&fields.read, &fields.path, &fields.content)
        {
            return Ok(ApprovalDiff {
                read: read.0.clone(),
                path: path.0.clone(),
                content: content.0.clone(),
            });
        }
        let given = [
            ("read", fields.read.is_some()),
            ("path", fields.path.is_some()),
            ("content", fields.content.is_some()),
        ];
        let absent: Vec<(&str, String)> = given
            .iter()
            .filter(|(_, given)| !given)
            .map(|(key, _)| {
                let message = format!(
                    "`{key}` is required (the read tool, the path argument and the content argument)"
                );
                (*key, message)
            })
            .collect();
        Err(missing(&absent))
    }
}
