//! The configuration's JSON Schema (`codemode config schema`) against what the reader accepts:
//! the committed copy, the embedded default, the docs' configs, misspelled keys, and the
//! configuration reference naming every key.

use serde_json::{Value, json};

use crate::tests::complete_doc_configs;

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&codemode_config::json_schema()).expect("the schema compiles")
}

/// A config text as a JSON value, read as the reader reads it (comments, trailing commas).
fn value_of(text: &str) -> Value {
    codemode_config::Document::parse(text)
        .expect("the config parses")
        .value()
        .clone()
}

/// The validator's errors for `instance`, as `instance path: message`.
fn problems(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn the_committed_schema_is_the_generated_one() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let committed =
        std::fs::read_to_string(root.join("docs/codemode.schema.json")).unwrap_or_default();
    assert!(
        committed == codemode_config::json_schema_text(),
        "docs/codemode.schema.json is not the schema the config types generate; regenerate \
         it with `cargo run -- config schema > docs/codemode.schema.json`"
    );
}

#[test]
fn the_schema_is_2020_12_and_closes_every_object() {
    let schema = codemode_config::json_schema();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    // Every object schema that lists its keys refuses others (maps of names, such as the
    // profiles or the servers, list none and take any name).
    let mut open = Vec::new();
    let mut stack = vec![("#".to_string(), &schema)];
    while let Some((at, node)) = stack.pop() {
        match node {
            Value::Object(map) => {
                if map.contains_key("properties")
                    && map.get("additionalProperties") != Some(&json!(false))
                {
                    open.push(at.clone());
                }
                for (k, v) in map {
                    // The test of a disabled server entry (skipped unread, so it may hold
                    // anything) is not an object the file holds.
                    if k != "if" {
                        stack.push((format!("{at}/{k}"), v));
                    }
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    stack.push((format!("{at}/{i}"), v));
                }
            }
            _ => {}
        }
    }
    assert_eq!(
        open,
        Vec::<String>::new(),
        "objects that accept unknown keys"
    );
}

#[test]
fn the_schema_accepts_the_default_config_and_every_config_in_the_docs() {
    let validator = validator();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let embedded = std::fs::read_to_string(root.join("host/src/default-config.json")).unwrap();
    let mut failures = Vec::new();
    for (name, text) in [
        ("host/src/default-config.json", embedded.as_str()),
        ("DEFAULT_CONFIG_JSON", codemode_config::DEFAULT_CONFIG_JSON),
    ] {
        let found = problems(&validator, &value_of(text));
        if !found.is_empty() {
            failures.push(format!("{name}: {found:?}"));
        }
    }
    let configs = complete_doc_configs();
    for (name, line, block) in &configs {
        let found = problems(&validator, &value_of(block));
        if !found.is_empty() {
            failures.push(format!("{name}, the block at line {line}: {found:?}"));
        }
    }
    assert_eq!(failures, Vec::<String>::new());
    assert!(
        configs.len() >= 4,
        "only {} configs in the docs",
        configs.len()
    );
}

#[test]
fn the_schema_refuses_misspelled_keys_at_the_top_and_nested() {
    let validator = validator();
    let cases = [
        (json!({"limts": {}}), "", "'limts'"),
        (json!({"limits": {"memroy": "1MiB"}}), "/limits", "'memroy'"),
        (
            json!({"evaluation": {"profiles": {"p": {"rules": [{"tools": ["*"], "disposition": "deny", "reasn": "x"}]}}}}),
            "/evaluation/profiles/p/rules/0",
            "'reasn'",
        ),
        (
            json!({"mcpServers": {"s": {"command": "x", "arg": []}}}),
            "/mcpServers/s",
            "'arg'",
        ),
        (
            json!({"server": {"auth": {"jwt": {"issuer": "i", "audience": "a", "jwks": "f"}}}}),
            "/server/auth/jwt",
            "'jwks'",
        ),
    ];
    for (config, path, key) in cases {
        let errors: Vec<_> = validator.iter_errors(&config).collect();
        assert!(
            errors
                .iter()
                .any(|e| e.instance_path().as_str() == path && e.to_string().contains(key)),
            "{config}: {:?}",
            problems(&validator, &config)
        );
        // The reader refuses it too, naming the key's path.
        let reader = codemode_policies::Config::from_json_str(&config.to_string()).unwrap_err();
        assert!(
            reader
                .iter()
                .any(|e| e.kind() == codemode_config::ConfigErrorKind::UnknownKey),
            "{reader}"
        );
    }
}

#[test]
fn a_config_may_name_the_schema_by_a_relative_path() {
    let text = r#"{"$schema": "../docs/codemode.schema.json", "limits": {"timeout": "5s"}}"#;
    let config = codemode_policies::Config::from_json_str(text).expect("the reader accepts it");
    assert_eq!(config.limits.timeout, std::time::Duration::from_secs(5));
    assert_eq!(
        problems(&validator(), &value_of(text)),
        Vec::<String>::new()
    );
}

/// The configuration reference names every key the schema knows, as `` `key` `` or as the last
/// part of a dotted path (`` `perClient.maxCount` ``).
#[test]
fn the_configuration_reference_names_every_key() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let reference = std::fs::read_to_string(root.join("docs/CONFIGURATION.md")).unwrap();
    let schema = codemode_config::json_schema();
    let mut keys = std::collections::BTreeSet::new();
    let mut stack = vec![&schema];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                if let Some(Value::Object(properties)) = map.get("properties") {
                    keys.extend(properties.keys().cloned());
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    let missing: Vec<&String> = keys
        .iter()
        .filter(|k| {
            !reference.contains(&format!("`{k}`"))
                && !reference.contains(&format!(".{k}`"))
                && !reference.contains(&format!("\"{k}\""))
        })
        .collect();
    assert_eq!(
        missing,
        Vec::<&String>::new(),
        "keys docs/CONFIGURATION.md does not name"
    );
}
