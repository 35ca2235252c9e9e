//! Builds the `evaluation` section: profiles, their lists and rules.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::EvaluationConfig;
use super::classification::read_classification;
use super::gateway_keys::{risk_map, risk_policies};
use super::globs::{glob_list, rule_tools};
use crate::profile::{
    Access, ApprovalDiff, Condition, DEFAULT_APPROVAL_TIMEOUT, DEFAULT_MAX_PENDING_APPROVALS,
    DispositionKind, Fallback, GlobList, PathCondition, Profile, Rule,
};
use crate::{ConfigErrorKind, ConfigErrors, Risk};
use codemode_config::{AccessRead, JsonPath, ProfileRead, Reader, RuleRead};

/// Reads the `evaluation` section at `path`: `codemode_config` reads it (every value checked
/// at its path, in the order of the file); here its profiles and classes become this crate's.
pub(crate) fn read_evaluation(r: &mut Reader, v: &Value, path: &JsonPath) -> EvaluationConfig {
    let read = codemode_config::read_evaluation(r, v, path);
    let profiles_at = path.key("profiles");
    let mut profiles = BTreeMap::new();
    for (name, profile) in read.profiles {
        let at = profiles_at.key(&name);
        // A profile with a problem anywhere in it is left out, as it always was.
        if let Some(p) = convert_profile(r, &name, profile, &at)
            && !r.reported(&at)
        {
            profiles.insert(name, Arc::new(p));
        }
    }
    let classification = read_classification(r, read.classification, path);
    EvaluationConfig {
        default_profile: read.default_profile,
        profiles,
        eval_requires_permissions: read.eval_requires_permissions.unwrap_or_default(),
        classification: Arc::new(classification),
    }
}

impl Profile {
    /// Builds a profile from the JSON of one profile entry (the value of
    /// `evaluation.profiles.<name>`), for embedding without a configuration file. Error paths
    /// are relative to that value.
    ///
    /// A `serde_json::Value` does not keep the written order of an object's keys (its maps are
    /// sorted unless serde_json's `preserve_order` feature is on), so the `risk` globs are tried
    /// in the map's own order here; [`crate::Config::from_json_str`] reads the text and keeps
    /// the written order.
    ///
    /// # Errors
    ///
    /// Every problem found (see [`crate::Config::from_json_str`]).
    pub fn from_json(name: &str, value: &Value) -> Result<Profile, ConfigErrors> {
        let mut r = Reader::new();
        let root = JsonPath::root();
        let profile = codemode_config::read_profile(&mut r, name, value, &root)
            .and_then(|read| convert_profile(&mut r, name, read, &root));
        match profile {
            Some(p) if r.error_count() == 0 => Ok(p),
            _ => Err(ConfigErrors {
                errors: r.into_errors(),
            }),
        }
    }
}

/// One profile as `codemode_config` read it, made a [`Profile`] with the documented defaults;
/// `None` if anything in it is wrong (the errors are in `r`).
fn convert_profile(
    r: &mut Reader,
    name: &str,
    read: ProfileRead,
    path: &JsonPath,
) -> Option<Profile> {
    let before = r.error_count();
    let list = |r: &mut Reader, globs: Option<Vec<String>>, key: &str| {
        globs.map(|g| glob_list(r, g, &path.key(key)).unwrap_or_default())
    };
    let allowlist = list(r, read.allowlist, "allowlist");
    let denylist = list(r, read.denylist, "denylist").unwrap_or_default();
    let asklist = list(r, read.asklist, "asklist").unwrap_or_default();
    let rules = read
        .rules
        .map(|rules| convert_rules(r, rules))
        .unwrap_or_default();
    let (risk_globs, risk_levels) = match read.risk {
        Some(entries) => risk_map(r, entries, &path.key("risk")).unwrap_or_default(),
        None => (GlobList::default(), Vec::new()),
    };
    let access = |r: &mut Reader, access: Option<AccessRead>, key: &str| {
        let path = path.key(key);
        access.map_or_else(Access::default, |a| Access {
            allow: a.allow.and_then(|g| glob_list(r, g, &path.key("allow"))),
            deny: a
                .deny
                .and_then(|g| glob_list(r, g, &path.key("deny")))
                .unwrap_or_default(),
        })
    };
    let resources = access(r, read.resources, "resources");
    let prompts = access(r, read.prompts, "prompts");
    let approval_diffs = read
        .approval_diffs
        .unwrap_or_default()
        .into_iter()
        .map(|(tool, d)| {
            let diff = ApprovalDiff {
                read: d.read,
                path: d.path,
                content: d.content,
            };
            (tool, diff)
        })
        .collect();
    if r.error_count() > before {
        return None;
    }
    Some(Profile {
        name: name.to_string(),
        description: read.description,
        allowlist,
        denylist,
        asklist,
        rules,
        elicitation_fallback: read
            .elicitation_fallback
            .map(Fallback::from)
            .unwrap_or_default(),
        approval_timeout: read.approval_timeout.unwrap_or(DEFAULT_APPROVAL_TIMEOUT),
        max_pending_approvals: read
            .max_pending_approvals
            .unwrap_or(DEFAULT_MAX_PENDING_APPROVALS),
        default_disposition: read
            .default_disposition
            .map_or(DispositionKind::Allow, DispositionKind::from),
        require_permissions: read.require_permissions.unwrap_or_default(),
        risk_globs,
        risk_levels,
        default_risk: read.default_risk.map(Risk::from).unwrap_or_default(),
        risk_policies: read.risk_policies.map(risk_policies).unwrap_or_default(),
        resources,
        prompts,
        sampling: read
            .sampling
            .map_or(DispositionKind::Ask, DispositionKind::from),
        approval_diffs,
    })
}

/// A profile's rules as `codemode_config` read them; a rule with a problem is left out (its
/// errors in `r`).
fn convert_rules(r: &mut Reader, rules: Vec<RuleRead>) -> Vec<Rule> {
    rules
        .into_iter()
        .filter_map(|rule| convert_rule(r, rule))
        .collect()
}

fn convert_rule(r: &mut Reader, rule: RuleRead) -> Option<Rule> {
    let before = r.error_count();
    let path = &rule.path;
    let tools = rule_tools(
        r,
        rule.tools,
        path,
        "the tool-name globs this rule applies to",
    );
    let disposition = match rule.disposition {
        Some(d) => Some(DispositionKind::from(d)),
        // Given with a wrong value: not also missing.
        None if r.reported(&path.key("disposition")) => None,
        None => {
            r.error(
                path,
                ConfigErrorKind::MissingField,
                "missing `disposition` (\"allow\", \"deny\" or \"ask\")",
            );
            None
        }
    };
    let when = rule
        .when
        .into_iter()
        .map(|(pointer, regex)| Condition { pointer, regex })
        .collect();
    let has_when_path = rule.when_path.is_some() || r.reported(&path.key("whenPath"));
    let mut when_path = Vec::new();
    for (pointer, globs) in rule.when_path.unwrap_or_default() {
        let at = path.key("whenPath").key(&pointer);
        match PathCondition::new(pointer, globs) {
            Ok(c) => when_path.push(c),
            Err((i, msg)) => r.error(&at.index(i), ConfigErrorKind::InvalidGlob, msg),
        }
    }
    let base = rule
        .base
        .and_then(|base| check_base(r, &base, &path.key("base"), has_when_path));
    if r.error_count() > before {
        return None;
    }
    Some(Rule {
        tools: tools?,
        when,
        when_path,
        base,
        disposition: disposition?,
        reason: rule.reason,
        require_permissions: rule.require_permissions.unwrap_or_default(),
        risk: rule.risk.map(Risk::from),
    })
}

/// A rule's `base`: an absolute directory, meaningful only with `whenPath`.
fn check_base(r: &mut Reader, base: &str, path: &JsonPath, has_when_path: bool) -> Option<String> {
    if !has_when_path {
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            "`base` resolves relative `whenPath` values; this rule has no `whenPath`",
        );
        return None;
    }
    if !base.starts_with('/') {
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            format!("`{base}` is not an absolute directory (it must start with `/`)"),
        );
        return None;
    }
    Some(crate::profile::normalize_path(base))
}
