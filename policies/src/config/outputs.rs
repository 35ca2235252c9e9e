//! The `outputs` section: masks and removals applied to tool results ([`OutputPolicy`]).

use serde_json::Value;

use super::evaluation::read_tools;
use crate::ConfigErrorKind;
use crate::outputs::{OutputPolicy, OutputRule, PathPattern};
use codemode_config::{JsonPath, Reader};

/// Reads `outputs` at `path`: an array of `{tools, mask?, redact?, allow?, strictSchema?}`, each
/// rule with at least one glob and at least one of `mask`, `redact`, `allow` and `strictSchema`.
pub(crate) fn read_outputs(r: &mut Reader, v: &Value, path: &JsonPath) -> OutputPolicy {
    let Value::Array(items) = v else {
        r.expected(
            path,
            "an array of rules ({\"tools\": [..], \"mask\": [..], \"redact\": [..]})",
            v,
        );
        return OutputPolicy::default();
    };
    let rules = items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| read_rule(r, item, &path.index(i)))
        .collect();
    OutputPolicy::new(rules)
}

fn read_rule(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<OutputRule> {
    let map = r.object(v, path, codemode_config::policy_keys::output_rule())?;
    let tools = read_tools(
        r,
        map.get("tools"),
        path,
        "the tool-name globs whose results this rule changes",
    );
    let mask = map.get("mask").map(|v| read_paths(r, v, &path.key("mask")));
    let redact = map
        .get("redact")
        .map(|v| read_paths(r, v, &path.key("redact")));
    let allow = map
        .get("allow")
        .map(|v| read_paths(r, v, &path.key("allow")));
    let strict = map
        .get("strictSchema")
        .and_then(|v| r.bool(v, &path.key("strictSchema")));
    if mask.is_none() && redact.is_none() && allow.is_none() && strict.is_none() {
        r.error(
            path,
            ConfigErrorKind::MissingField,
            "needs `mask`, `redact` (the JSON Pointers to hide), `allow` (the only ones to keep) or `strictSchema`",
        );
        return None;
    }
    Some(
        OutputRule::new(
            tools?,
            mask.unwrap_or_default(),
            redact.unwrap_or_default(),
            allow,
        )
        .strict_schema(strict.unwrap_or(false)),
    )
}

/// An array of JSON Pointers with `*` segments; each bad one is an error at its index.
fn read_paths(r: &mut Reader, v: &Value, path: &JsonPath) -> Vec<PathPattern> {
    let Some(items) = r.strings(v, path) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(items.len());
    for (p, text) in items {
        match PathPattern::parse(&text) {
            Ok(pattern) => out.push(pattern),
            Err(msg) => r.error(&p, ConfigErrorKind::InvalidPointer, msg.to_string()),
        }
    }
    out
}
