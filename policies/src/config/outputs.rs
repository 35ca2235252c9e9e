//! The `outputs` section: masks and removals applied to tool results ([`OutputPolicy`]).
//! `codemode_config` reads it into typed rules ([`OutputRuleRead`]); here each becomes an
//! [`OutputRule`], its globs and JSON Pointers checked.

use serde_json::Value;

use super::globs::rule_tools;
use crate::ConfigErrorKind;
use crate::outputs::{OutputPolicy, OutputRule, PathPattern};
use codemode_config::{JsonPath, OutputRuleRead, Reader};

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
    // Each rule converted once read, so that its errors come together.
    let mut rules = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if let Some(rule) = codemode_config::read_output_rule(r, item, &path.index(i)) {
            rules.extend(convert_rule(r, rule));
        }
    }
    OutputPolicy::new(rules)
}

fn convert_rule(r: &mut Reader, rule: OutputRuleRead) -> Option<OutputRule> {
    let path = &rule.path;
    let tools = rule_tools(
        r,
        rule.tools,
        path,
        "the tool-name globs whose results this rule changes",
    );
    let given = |key: &str, list: Option<Vec<Option<String>>>, r: &mut Reader| {
        let at = path.key(key);
        match list {
            Some(list) => Some(parse_paths(r, list, &at)),
            // Given with a wrong value: given all the same.
            None => r.reported(&at).then(Vec::new),
        }
    };
    let mask = given("mask", rule.mask, r);
    let redact = given("redact", rule.redact, r);
    let allow = given("allow", rule.allow, r);
    let strict = rule.strict_schema;
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

/// JSON Pointers with `*` segments; each bad one is an error at its index.
fn parse_paths(r: &mut Reader, list: Vec<Option<String>>, path: &JsonPath) -> Vec<PathPattern> {
    let mut out = Vec::with_capacity(list.len());
    for (i, text) in list.into_iter().enumerate() {
        let Some(text) = text else { continue };
        match PathPattern::parse(&text) {
            Ok(pattern) => out.push(pattern),
            Err(msg) => r.error(
                &path.index(i),
                ConfigErrorKind::InvalidPointer,
                msg.to_string(),
            ),
        }
    }
    out
}
