//! Builds the `evaluation` section: profiles, their lists and rules.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::EvaluationConfig;
use super::gateway_keys::{glob_list, read_permissions, read_risk, risk_map, risk_policies};
use crate::profile::{
    Access, ApprovalDiff, Condition, DEFAULT_APPROVAL_TIMEOUT, DEFAULT_MAX_PENDING_APPROVALS,
    DispositionKind, Fallback, GlobList, PathCondition, Profile, Rule,
};
use crate::{ConfigErrorKind, ConfigErrors, Risk};
use codemode_config::{AccessRead, JsonPath, Reader, describe};

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
        .map(|v| read_rules(r, &v, &path.key("rules")))
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
        .map(|v| read_approval_diffs(r, &v, &path.key("approvalDiffs")))
        .unwrap_or_default();
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

/// A profile's `approvalDiffs`: `{"<tool>": {"read", "path", "content"}}`, each a non-empty
/// string.
fn read_approval_diffs(
    r: &mut Reader,
    v: &Value,
    path: &JsonPath,
) -> BTreeMap<String, ApprovalDiff> {
    let mut out = BTreeMap::new();
    let Some(tools) = r.any_object(v, path) else {
        return out;
    };
    for (tool, spec) in tools {
        let at = path.key(tool);
        let Some(map) = r.object(spec, &at, codemode_config::policy_keys::approval_diff()) else {
            continue;
        };
        let field = |r: &mut Reader, key: &str| -> Option<String> {
            let Some(v) = map.get(key) else {
                r.error(
                    &at,
                    ConfigErrorKind::MissingField,
                    format!("`{key}` is required (the read tool, the path argument and the content argument)"),
                );
                return None;
            };
            let s = r.string(v, &at.key(key))?;
            if s.is_empty() {
                r.error(
                    &at.key(key),
                    ConfigErrorKind::InvalidValue,
                    "must not be empty",
                );
                return None;
            }
            Some(s.to_string())
        };
        let (read, arg, content) = (field(r, "read"), field(r, "path"), field(r, "content"));
        if let (Some(read), Some(path), Some(content)) = (read, arg, content) {
            out.insert(
                tool.clone(),
                ApprovalDiff {
                    read,
                    path,
                    content,
                },
            );
        }
    }
    out
}

/// A profile's `rules`, without the ones that are wrong (the errors are in `r`).
fn read_rules(r: &mut Reader, v: &Value, path: &JsonPath) -> Vec<Rule> {
    let mut rules = Vec::new();
    match v {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if let Some(rule) = read_rule(r, item, &path.index(i)) {
                    rules.push(rule);
                }
            }
        }
        _ => r.expected(path, "an array of rules", v),
    }
    rules
}

fn read_tools(r: &mut Reader, v: Option<&Value>, rule: &JsonPath, what: &str) -> Option<GlobList> {
    match v {
        Some(Value::Array(a)) if a.is_empty() => {
            r.error(
                &rule.key("tools"),
                ConfigErrorKind::InvalidValue,
                "needs at least one glob (e.g. \"server__*\")",
            );
            None
        }
        Some(v) => read_globs(r, v, &rule.key("tools")),
        None => {
            r.error(
                rule,
                ConfigErrorKind::MissingField,
                format!("missing `tools` ({what})"),
            );
            None
        }
    }
}

pub(super) fn read_globs(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<GlobList> {
    let items = r.strings(v, path)?;
    globs_at(r, items)
}

/// The globs of a list, each given with its path: each bad one is an error there.
pub(super) fn globs_at(r: &mut Reader, items: Vec<(JsonPath, String)>) -> Option<GlobList> {
    let (paths, globs): (Vec<JsonPath>, Vec<String>) = items.into_iter().unzip();
    match GlobList::new(globs) {
        Ok(list) => Some(list),
        Err(errors) => {
            for (i, msg) in errors {
                r.error(&paths[i], ConfigErrorKind::InvalidGlob, msg);
            }
            None
        }
    }
}

fn read_rule(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<Rule> {
    let before = r.error_count();
    let map = r.object(v, path, codemode_config::policy_keys::rule())?;
    let tools = read_tools(
        r,
        map.get("tools"),
        path,
        "the tool-name globs this rule applies to",
    );
    let disposition = match map.get("disposition") {
        Some(v) => read_disposition(r, v, &path.key("disposition")),
        None => {
            r.error(
                path,
                ConfigErrorKind::MissingField,
                "missing `disposition` (\"allow\", \"deny\" or \"ask\")",
            );
            None
        }
    };
    let reason = match map.get("reason") {
        Some(v) => r.string(v, &path.key("reason")).map(str::to_string),
        None => None,
    };
    let require_permissions = match map.get("requirePermissions") {
        Some(v) => read_permissions(r, v, &path.key("requirePermissions")),
        None => Vec::new(),
    };
    let risk = map
        .get("risk")
        .and_then(|v| read_risk(r, v, &path.key("risk")));
    let mut when = Vec::new();
    if let Some(v) = map.get("when") {
        let wpath = path.key("when");
        if let Some(conds) = r.any_object(v, &wpath) {
            for (pointer, rv) in conds {
                if let Some(c) = read_condition(r, pointer, rv, &wpath.key(pointer)) {
                    when.push(c);
                }
            }
        }
    }
    let mut when_path = Vec::new();
    if let Some(v) = map.get("whenPath") {
        let wpath = path.key("whenPath");
        if let Some(conds) = r.any_object(v, &wpath) {
            for (pointer, gv) in conds {
                if let Some(c) = read_path_condition(r, pointer, gv, &wpath.key(pointer)) {
                    when_path.push(c);
                }
            }
        }
    }
    let base = map
        .get("base")
        .and_then(|v| read_base(r, v, &path.key("base"), map.contains_key("whenPath")));
    if r.error_count() > before {
        return None;
    }
    Some(Rule {
        tools: tools?,
        when,
        when_path,
        base,
        disposition: disposition?,
        reason,
        require_permissions,
        risk,
    })
}

/// `"allow"`, `"deny"` or `"ask"`.
fn read_disposition(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<DispositionKind> {
    match v.as_str() {
        Some("allow") => Some(DispositionKind::Allow),
        Some("deny") => Some(DispositionKind::Deny),
        Some("ask") => Some(DispositionKind::Ask),
        _ => {
            let found = describe(v);
            r.error(
                path,
                ConfigErrorKind::InvalidValue,
                format!("expected \"allow\", \"deny\" or \"ask\", found {found}"),
            );
            None
        }
    }
}

fn read_condition(r: &mut Reader, pointer: &str, v: &Value, path: &JsonPath) -> Option<Condition> {
    if let Err(msg) = check_pointer(pointer) {
        r.error(path, ConfigErrorKind::InvalidPointer, msg);
    }
    let pattern = r.string(v, path)?;
    match regex::Regex::new(pattern) {
        Ok(regex) => Some(Condition {
            pointer: pointer.to_string(),
            regex,
        }),
        Err(e) => {
            r.error(
                path,
                ConfigErrorKind::InvalidRegex,
                format!("invalid regex `{pattern}`: {}", regex_problem(pattern, &e)),
            );
            None
        }
    }
}

/// One `whenPath` entry: a JSON Pointer → a non-empty array of absolute path globs.
fn read_path_condition(
    r: &mut Reader,
    pointer: &str,
    v: &Value,
    path: &JsonPath,
) -> Option<PathCondition> {
    if let Err(msg) = check_pointer(pointer) {
        r.error(path, ConfigErrorKind::InvalidPointer, msg);
    }
    if matches!(v, Value::Array(a) if a.is_empty()) {
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            "needs at least one path glob (e.g. [\"/etc/**\"])",
        );
        return None;
    }
    let items = r.strings(v, path)?;
    let (paths, globs): (Vec<JsonPath>, Vec<String>) = items.into_iter().unzip();
    match PathCondition::new(pointer.to_string(), globs) {
        Ok(c) => Some(c),
        Err((i, msg)) => {
            r.error(&paths[i], ConfigErrorKind::InvalidGlob, msg);
            None
        }
    }
}

/// A rule's `base`: an absolute directory, meaningful only with `whenPath`.
fn read_base(r: &mut Reader, v: &Value, path: &JsonPath, has_when_path: bool) -> Option<String> {
    let base = r.string(v, path)?;
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

/// RFC 6901: `""`, or `/`-separated tokens where `~` is only in `~0` and `~1`.
fn check_pointer(pointer: &str) -> Result<(), String> {
    if !(pointer.is_empty() || pointer.starts_with('/')) {
        return Err(format!(
            "`{pointer}` is not a JSON Pointer: it must be \"\" (the whole arguments) or start with `/` (e.g. \"/{pointer}\")"
        ));
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(format!(
                "`{pointer}` is not a JSON Pointer: `~` must be followed by 0 (for `~`) or 1 (for `/`)"
            ));
        }
    }
    Ok(())
}

/// The regex crate's message on one line, with the position when it is a syntax error.
fn regex_problem(pattern: &str, e: &regex::Error) -> String {
    let span = match regex_syntax::Parser::new().parse(pattern) {
        Err(regex_syntax::Error::Parse(e)) => Some((e.kind().to_string(), *e.span())),
        Err(regex_syntax::Error::Translate(e)) => Some((e.kind().to_string(), *e.span())),
        _ => None,
    };
    match (e, span) {
        (regex::Error::Syntax(_), Some((kind, span))) => {
            format!("{kind} (at character {})", span.start.column)
        }
        (regex::Error::CompiledTooBig(limit), _) => {
            format!("the compiled regex exceeds the size limit of {limit} bytes")
        }
        _ => e
            .to_string()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers() {
        let ok = ["", "/", "/a", "/a/0/b", "/a~0b", "/a~1b", "/~01"];
        for p in ok {
            assert_eq!(check_pointer(p), Ok(()), "{p}");
        }
        let bad = [
            ("path", "start with `/`"),
            ("/a~2", "`~` must be followed"),
            ("/a~", "`~` must"),
        ];
        for (p, want) in bad {
            let err = check_pointer(p).unwrap_err();
            assert!(err.contains(want), "{p}: {err}");
        }
    }

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

    #[test]
    fn regex_messages_are_one_line_with_a_position() {
        let cases = [
            ("^/etc/(", "unclosed group (at character 7)"),
            ("a{2,1}", "invalid repetition count range"),
            ("\\p{Nope}", "Unicode property not found"),
        ];
        for (pattern, want) in cases {
            let e = regex::Regex::new(pattern).unwrap_err();
            let msg = regex_problem(pattern, &e);
            assert!(
                msg.contains(want) && !msg.contains('\n'),
                "{pattern}: {msg}"
            );
        }
    }
}
