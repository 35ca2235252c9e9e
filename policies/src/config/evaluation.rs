//! Builds the `evaluation` section: profiles, their lists and rules.

use std::sync::Arc;

use serde_json::Value;

use super::EvaluationConfig;
use super::gateway_keys::{read_permissions, risk_map, risk_policies};
use super::globs::{glob_list, rule_tools};
use crate::profile::{
    Access, ApprovalDiff, Condition, DEFAULT_APPROVAL_TIMEOUT, DEFAULT_MAX_PENDING_APPROVALS,
    DispositionKind, Fallback, GlobList, PathCondition, Profile, Rule,
};
use crate::{ConfigErrorKind, ConfigErrors, Risk};
use codemode_config::{AccessRead, JsonPath, Reader, RuleRead};

pub(crate) fn read_evaluation(r: &mut Reader, v: &Value, path: &JsonPath) -> EvaluationConfig {
    let mut out = EvaluationConfig::default();
    let Some(map) = r.object(v, path, codemode_config::policy_keys::evaluation()) else {
        return out;
    };
    if let Some(v) = map.get("evalRequiresPermissions") {
        out.eval_requires_permissions =
            read_permissions(r, v, &path.key("evalRequiresPermissions"));
    }
    let mut names: Vec<&str> = Vec::new();
    if let Some(v) = map.get("profiles") {
        let ppath = path.key("profiles");
        if let Some(profiles) = r.any_object(v, &ppath) {
            for (name, pv) in profiles {
                names.push(name);
                if let Some(p) = read_profile(r, name, pv, &ppath.key(name)) {
                    out.profiles.insert(name.clone(), Arc::new(p));
                }
            }
        }
    }
    if let Some(v) = map.get("defaultProfile") {
        let dpath = path.key("defaultProfile");
        if let Some(name) = r.string(v, &dpath) {
            if names.contains(&name) {
                out.default_profile = Some(name.to_string());
            } else {
                let have = if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                };
                r.error(
                    &dpath,
                    ConfigErrorKind::UnknownProfile,
                    format!("no profile is called `{name}`; profiles: {have}"),
                );
            }
        }
    }
    out
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
        let profile = read_profile(&mut r, name, value, &JsonPath::root());
        match profile {
            Some(p) if r.error_count() == 0 => Ok(p),
            _ => Err(ConfigErrors {
                errors: r.into_errors(),
            }),
        }
    }
}

/// `^[A-Za-z0-9_]{1,32}$`
fn valid_profile_name(name: &str) -> bool {
    (1..=32).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One profile; `None` if anything in it is wrong (the errors are in `r`).
/// `codemode_config` reads it (every value checked at its path); here it becomes a
/// [`Profile`], with the documented defaults.
fn read_profile(r: &mut Reader, name: &str, v: &Value, path: &JsonPath) -> Option<Profile> {
    let before = r.error_count();
    if !valid_profile_name(name) {
        r.error(
            path,
            ConfigErrorKind::InvalidName,
            format!("invalid profile name `{name}`: use 1 to 32 ASCII letters, digits or `_`"),
        );
    }
    let read = codemode_config::read_profile(r, v, path)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names() {
        for (name, ok) in [
            ("safe", true),
            ("a_B_9", true),
            ("", false),
            ("a-b", false),
            ("é", false),
        ] {
            assert_eq!(valid_profile_name(name), ok, "{name}");
        }
        assert!(valid_profile_name(&"x".repeat(32)));
        assert!(!valid_profile_name(&"x".repeat(33)));
    }
}
