use serde_json::{Value, json};

use super::*;

fn one(input: Value, output: Option<Value>) -> (ToolSchemas, Vec<SchemaProblem>) {
    ToolSchemas::compile([ToolSchemaSpec {
        name: "fs__write_file",
        input_schema: &input,
        output_schema: output.as_ref(),
        signature:
            "function fs__write_file(args: { path: string; content: string }): Promise<unknown>;"
                .into(),
        annotated: None,
    }])
}

fn write_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "content": {"type": "string"},
            "mode": {"enum": ["w", "a"]},
            "tags": {"type": "array", "items": {"type": ["string", "null"]}}
        },
        "required": ["path", "content"],
        "additionalProperties": false
    })
}

#[test]
fn each_failing_path_says_what_was_expected_and_given() {
    let (schemas, problems) = one(write_schema(), None);
    assert_eq!(problems, vec![]);
    assert!(schemas.checks_arguments_of("fs__write_file"));
    assert_eq!(
        schemas.check_arguments("fs__write_file", &json!({"path": "/a", "content": "x"})),
        Ok(())
    );
    let invalid = schemas
        .check_arguments(
            "fs__write_file",
            &json!({"path": 42, "mode": "x", "tags": ["a", 1], "extra": true}),
        )
        .unwrap_err();
    let got: Vec<(&str, &str)> = invalid
        .errors
        .iter()
        .map(|v| (v.path.as_str(), v.message.as_str()))
        .collect();
    let mut got_sorted = got.clone();
    got_sorted.sort();
    assert_eq!(
        got_sorted,
        vec![
            ("", "\"content\" is a required property"),
            (
                "",
                "Additional properties are not allowed ('extra' was unexpected)"
            ),
            ("/mode", "\"x\" is not one of \"w\" or \"a\""),
            ("/path", "expected string, got number (42)"),
            ("/tags/1", "expected null or string, got number (1)"),
        ]
    );
    // The masked forms leave the given values out.
    let masked: Vec<&str> = invalid.masked.iter().map(|v| v.message.as_str()).collect();
    assert!(masked.iter().all(|m| !m.contains("42")), "{masked:?}");
    assert_eq!(invalid.more, 0);
    // The script's error: one line naming the wrong and the expected keys, then the other
    // violations and where the types are; `.data` exactly.
    let ToolError::Failed { message, data } = invalid.to_tool_error() else {
        panic!("not Failed");
    };
    let mut rest: Vec<&str> = got
        .iter()
        .filter(|(p, _)| !p.is_empty())
        .map(|(_, m)| *m)
        .collect();
    rest.sort();
    assert_eq!(
        rest,
        [
            "\"x\" is not one of \"w\" or \"a\"",
            "expected null or string, got number (1)",
            "expected string, got number (42)"
        ]
    );
    assert!(
        message.starts_with(
            "invalid_arguments: `fs__write_file` was not called: unknown key `extra`; expected \
             `path`, `content` (optional: `mode`, `tags`); "
        ),
        "{message}"
    );
    assert!(
        message.contains("/path: expected string, got number (42)"),
        "{message}"
    );
    assert!(!message.contains("required property"), "{message}");
    assert!(
        message.ends_with(" (its types: get_tools({names: [\"fs__write_file\"]}))"),
        "{message}"
    );
    assert!(!message.contains('\n'), "{message}");
    let want_errors: Vec<Value> = got
        .iter()
        .map(|(p, m)| json!({"path": p, "message": m}))
        .collect();
    assert_eq!(
        data,
        Some(json!({ "errors": want_errors, "unknown": ["extra"], "missing": ["content"] }))
    );
    assert!(invalid.summary().starts_with("invalid_arguments: "));
    assert!(invalid.masked_summary().starts_with("invalid_arguments: "));
    assert!(!invalid.masked_summary().contains("42"));
}

#[test]
fn arguments_that_are_not_an_object_fail_at_the_root() {
    let (schemas, _) = one(write_schema(), None);
    let invalid = schemas
        .check_arguments("fs__write_file", &json!("just text"))
        .unwrap_err();
    assert_eq!(
        invalid.errors,
        vec![Violation {
            path: String::new(),
            message: "expected object, got string (\"just text\")".into()
        }]
    );
}

#[test]
fn long_values_are_cut_and_many_violations_counted() {
    let (schemas, _) = one(
        json!({"type": "object", "additionalProperties": {"type": "number"}}),
        None,
    );
    let mut args = serde_json::Map::new();
    for i in 0..25 {
        args.insert(format!("k{i:02}"), json!("x".repeat(1000)));
    }
    let invalid = schemas
        .check_arguments("fs__write_file", &Value::Object(args))
        .unwrap_err();
    assert_eq!(invalid.errors.len(), MAX_VIOLATIONS);
    assert_eq!(invalid.more, 5);
    assert!(
        invalid
            .errors
            .iter()
            .all(|v| v.message.chars().count() == MAX_VIOLATION_CHARS && v.message.ends_with('…'))
    );
    assert!(invalid.summary().ends_with("; … and 5 more"));
}

#[test]
fn control_characters_in_messages_are_neutralized() {
    let (schemas, _) = one(
        json!({"type": "object", "properties": {}, "additionalProperties": false}),
        None,
    );
    let invalid = schemas
        .check_arguments("fs__write_file", &json!({"a\nb\u{1b}[2K": 1}))
        .unwrap_err();
    let m = &invalid.errors[0].message;
    assert!(!m.contains('\n') && !m.contains('\u{1b}'), "{m}");
    assert!(m.contains("a\\nb\\u001b[2K"), "{m}");
}

#[test]
fn schemas_that_do_not_compile_are_reported_and_not_enforced() {
    let (schemas, problems) = one(
        json!({"type": "no-such-type"}),
        Some(json!({"minimum": "x"})),
    );
    assert_eq!(
        problems.iter().map(|p| p.kind).collect::<Vec<_>>(),
        vec![SchemaKind::Input, SchemaKind::Output]
    );
    assert!(problems[0].to_string().starts_with(
        "the inputSchema of `fs__write_file` is not a valid JSON Schema, so it is not enforced: "
    ));
    assert!(!schemas.checks_arguments_of("fs__write_file"));
    assert_eq!(schemas.check_arguments("fs__write_file", &json!(7)), Ok(()));
    assert_eq!(schemas.check_output("fs__write_file", &json!(7), &[]), None);
    // A remote `$ref` is never fetched: the schema does not compile.
    let (_, problems) = one(json!({"$ref": "http://127.0.0.1:9/schema.json"}), None);
    assert_eq!(problems.len(), 1);
}

#[test]
fn declared_drafts_are_honoured_and_2020_12_is_the_default() {
    // Draft 4's boolean `exclusiveMaximum`; in 2020-12 it must be a number.
    let draft4 = json!({"$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object", "properties": {"n": {"type": "number", "maximum": 5, "exclusiveMaximum": true}}});
    let (schemas, problems) = one(draft4, None);
    assert_eq!(problems, vec![]);
    assert!(
        schemas
            .check_arguments("fs__write_file", &json!({"n": 5}))
            .is_err()
    );
    assert!(
        schemas
            .check_arguments("fs__write_file", &json!({"n": 4}))
            .is_ok()
    );
    // 2020-12 `prefixItems`, without `$schema`.
    let (schemas, problems) = one(
        json!({"type": "object", "properties": {"p": {"prefixItems": [{"type": "string"}]}}}),
        None,
    );
    assert_eq!(problems, vec![]);
    let invalid = schemas
        .check_arguments("fs__write_file", &json!({"p": [1]}))
        .unwrap_err();
    assert_eq!(invalid.errors[0].path, "/p/0");
}

#[test]
fn unknown_tools_pass() {
    let (schemas, _) = one(write_schema(), None);
    assert_eq!(schemas.check_arguments("other", &json!(1)), Ok(()));
    assert!(!schemas.checks_arguments_of("other"));
    assert_eq!(
        ToolSchemas::default().check_arguments("fs__write_file", &json!(1)),
        Ok(())
    );
}

#[test]
fn output_mismatches_name_the_tool_and_path() {
    let (schemas, _) = one(
        write_schema(),
        Some(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        ),
    );
    assert_eq!(
        schemas.check_output("fs__write_file", &json!({"n": 3}), &[]),
        None
    );
    assert_eq!(
        schemas
            .check_output("fs__write_file", &json!({"n": "three"}), &[])
            .as_deref(),
        Some(
            "the result of `fs__write_file` does not match its outputSchema: /n: expected integer, got string"
        )
    );
    assert_eq!(
        schemas
            .check_output("fs__write_file", &json!({}), &[])
            .as_deref(),
        Some(
            "the result of `fs__write_file` does not match its outputSchema: (root): \"n\" is a required property"
        )
    );
    assert_eq!(schemas.check_output("other", &json!(1), &[]), None);
}

/// A result is checked as returned, before the output policy masks or removes anything: the
/// warning names no value, no key of the result, and nothing at or below a hidden path.
#[test]
fn output_warnings_name_no_value_nor_what_the_output_policy_hides() {
    let (schemas, _) = one(
        write_schema(),
        Some(
            json!({"type": "object", "additionalProperties": false, "properties": {
            "n": {"type": "integer"},
            "card": {"type": "object", "properties": {"number": {"type": "integer"}}}}}),
        ),
    );
    let result = json!({"n": "s3cret", "card": {"number": "4111 1111 1111 1111"},
        "ssn_078-05-1120": true});
    let hidden = ["/card/number".to_string(), "/ssn_078-05-1120".to_string()];
    assert_eq!(
        schemas
            .check_output("fs__write_file", &result, &hidden)
            .as_deref(),
        Some(
            "the result of `fs__write_file` does not match its outputSchema: /n: expected integer, got string; (root): 1 unexpected property; 1 at fields the output policy hides"
        )
    );
    // Nothing hidden: the path is shown, never the value nor the unexpected key.
    assert_eq!(
        schemas
            .check_output("fs__write_file", &result, &[])
            .as_deref(),
        Some(
            "the result of `fs__write_file` does not match its outputSchema: /card/number: expected integer, got string; /n: expected integer, got string; (root): 1 unexpected property"
        )
    );
}

/// The media values codemode adds beside an upstream's structured content (`_media`) are not
/// the tool's: a closed schema still matches; everything else is checked as before.
#[test]
fn the_media_member_is_left_out_of_the_output_check() {
    let (schemas, _) = one(
        write_schema(),
        Some(json!({"type": "object", "additionalProperties": false,
                    "properties": {"n": {"type": "integer"}}})),
    );
    let media = json!([{"type": "image", "mimeType": "image/png", "size": 3,
                        "id": "0123456789abcdef0123456789abcdef"}]);
    let check = |v: Value| schemas.check_output("fs__write_file", &v, &[]);
    assert_eq!(check(json!({"n": 1, MEDIA_KEY: media})), None);
    assert_eq!(
        check(json!({"n": "x", MEDIA_KEY: media})).as_deref(),
        Some(
            "the result of `fs__write_file` does not match its outputSchema: /n: expected integer, got string"
        )
    );
}

/// A wrong key is named with the expected ones, in one short line (the model's commonest slip).
#[test]
fn a_wrong_key_is_named_with_the_expected_ones() {
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"},
        "head": {"type": "number"}, "tail": {"type": "number"}}, "required": ["path"]});
    let (schemas, _) = one(schema, None);
    let invalid = schemas
        .check_arguments("fs__write_file", &json!({"filePath": "notes.md"}))
        .unwrap_err();
    let ToolError::Failed { message, .. } = invalid.to_tool_error() else {
        panic!("not Failed");
    };
    assert_eq!(
        message,
        "invalid_arguments: `fs__write_file` was not called: unknown key `filePath`; expected \
         `path` (optional: `head`, `tail`) (its types: get_tools({names: [\"fs__write_file\"]}))"
    );
    // Many long violations stay within the budget, the rest counted.
    let (schemas, _) = one(
        json!({"type": "object", "additionalProperties": {"type": "number"}}),
        None,
    );
    let args: serde_json::Map<String, Value> = (0..25)
        .map(|i| (format!("k{i:02}"), json!("x".repeat(1000))))
        .collect();
    let invalid = schemas
        .check_arguments("fs__write_file", &Value::Object(args))
        .unwrap_err();
    let ToolError::Failed { message, .. } = invalid.to_tool_error() else {
        panic!("not Failed");
    };
    assert!(
        message.len() <= MAX_ARGUMENTS_MESSAGE,
        "{} bytes: {message}",
        message.len()
    );
    assert!(message.contains("more"), "{message}");
}
