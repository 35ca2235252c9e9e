use serde_json::{Value, json};

use super::*;
use crate::Config;

fn policy(outputs: Value) -> std::sync::Arc<OutputPolicy> {
    Config::from_json_str(&json!({ "outputs": outputs }).to_string())
        .unwrap()
        .outputs
}

#[test]
fn masks_keep_the_tail_of_long_strings_only() {
    let cases = [
        (json!("hunter2"), json!("***")),
        (json!("123456789012"), json!("***")), // 12 characters: not longer than 12
        (json!("1234567890123"), json!("***0123")),
        (json!("ééééééééééééabcd"), json!("***abcd")), // characters, not bytes
        (json!(""), json!("***")),
        (json!(42), json!("***")),
        (json!(null), json!("***")),
        (json!(true), json!("***")),
        (json!({"nested": "secret"}), json!("***")),
        (json!(["a", "b"]), json!("***")),
    ];
    for (value, want) in cases {
        assert_eq!(mask_value(&value), want, "{value}");
    }
}

#[test]
fn rules_apply_to_the_tools_they_name() {
    let p = policy(json!([
        {"tools": ["db__*"], "mask": ["/password"]},
        {"tools": ["db__get_user"], "redact": ["/ssn"]}
    ]));
    let original = json!({"password": "pw", "ssn": "1", "name": "ann"});
    let mut v = original.clone();
    assert_eq!(p.apply("db__get_user", &mut v), vec!["/password", "/ssn"]);
    assert_eq!(v, json!({"password": "***", "name": "ann"}));
    let mut v = original.clone();
    assert_eq!(p.apply("db__list", &mut v), vec!["/password"]);
    assert_eq!(v, json!({"password": "***", "ssn": "1", "name": "ann"}));
    let mut v = original.clone();
    assert_eq!(p.apply("web__get", &mut v), Vec::<String>::new());
    assert_eq!(v, original);
    assert!(p.applies_to("db__x") && !p.applies_to("web__get"));
}

#[test]
fn wildcards_reach_every_element_and_member() {
    let p = policy(json!([{"tools": ["*"],
        "mask": ["/items/*/token", "/by/*"], "redact": ["/items/*/internal"]}]));
    let mut v = json!({
        "items": [
            {"token": "tok_0123456789abcdef", "internal": 1},
            {"name": "x"},
            {"token": 7, "internal": {"deep": true}}
        ],
        "by": {"a": "short", "b": [1, 2]}
    });
    let paths = p.apply("t", &mut v);
    assert_eq!(
        v,
        json!({
            "items": [{"token": "***cdef"}, {"name": "x"}, {"token": "***"}],
            "by": {"a": "***", "b": "***"}
        })
    );
    assert_eq!(
        paths,
        vec![
            "/by/a",
            "/by/b",
            "/items/0/internal",
            "/items/0/token",
            "/items/2/internal",
            "/items/2/token"
        ]
    );
}

#[test]
fn redacting_array_elements_removes_each_one_it_matched() {
    let p = policy(json!([{"tools": ["*"], "redact": ["/rows/1", "/rows/3", "/rows/10"]}]));
    let mut v = json!({"rows": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]});
    assert_eq!(p.apply("t", &mut v), vec!["/rows/1", "/rows/3", "/rows/10"]);
    assert_eq!(v, json!({"rows": [0, 2, 4, 5, 6, 7, 8, 9, 11]}));
    let p = policy(json!([{"tools": ["*"], "redact": ["/*"]}]));
    let mut v = json!([1, 2, 3]);
    assert_eq!(p.apply("t", &mut v), vec!["/0", "/1", "/2"]);
    assert_eq!(v, json!([]));
}

#[test]
fn the_empty_path_covers_the_whole_result_text_included() {
    let mask = policy(json!([{"tools": ["*"], "mask": [""]}]));
    let mut text = json!("the api key is sk-live-abcdefgh");
    assert_eq!(mask.apply("t", &mut text), vec![""]);
    assert_eq!(text, json!("***efgh"));
    let mut obj = json!({"a": 1});
    assert_eq!(mask.apply("t", &mut obj), vec![""]);
    assert_eq!(obj, json!("***"));
    let redact = policy(json!([{"tools": ["*"], "redact": [""]}]));
    let mut text = json!("secret");
    assert_eq!(redact.apply("t", &mut text), vec![""]);
    assert_eq!(text, Value::Null);
    // Other paths never reach into text.
    let p = policy(json!([{"tools": ["*"], "mask": ["/password", "/*"]}]));
    let mut text = json!("password: x");
    assert_eq!(p.apply("t", &mut text), Vec::<String>::new());
    assert_eq!(text, json!("password: x"));
}

#[test]
fn mask_and_redact_of_overlapping_paths() {
    // A member both masked and removed is removed; a mask above a removed path hides it too.
    let p = policy(json!([{"tools": ["*"], "mask": ["/a", "/b"], "redact": ["/a", "/b/c"]}]));
    let mut v = json!({"a": "x", "b": {"c": 1, "d": 2}, "e": 3});
    assert_eq!(p.apply("t", &mut v), vec!["/a", "/b", "/b/c"]);
    assert_eq!(v, json!({"b": "***", "e": 3}));
}

/// `allow` denies by default: only the allowed fields, their subtrees and the structure leading
/// to them stay; everything else is removed and listed; `mask`/`redact` apply within.
#[test]
fn allow_keeps_only_the_allowed_fields() {
    let p = policy(json!([
        {"tools": ["shop__*"], "allow": ["/customer/*", "/items/*/id"]},
        {"tools": ["shop__order"], "mask": ["/customer/card"], "redact": ["/items/1"]},
        {"tools": ["shop__order"], "allow": ["/total"]}
    ]));
    let mut v = json!({
        "customer": {"name": "Ann", "card": "4111111111111111", "address": {"city": "X"}},
        "items": [{"id": 1, "cost": 3}, {"id": 2, "cost": 4}, {"note": "n"}, 7],
        "total": 10,
        "internal": {"margin": 0.4},
        "token": "t"
    });
    assert_eq!(
        p.apply("shop__order", &mut v),
        vec![
            "/customer/card",
            "/internal",
            "/items/0/cost",
            "/items/1",
            "/items/2/note",
            "/items/3",
            "/token"
        ]
    );
    assert_eq!(
        v,
        json!({
            "customer": {"name": "Ann", "card": "***1111", "address": {"city": "X"}},
            "items": [{"id": 1}, {}],
            "total": 10
        })
    );
    // Another tool of the first rule: only its own allow list.
    let mut v = json!({"customer": {"name": "Bo"}, "total": 3});
    assert_eq!(p.apply("shop__list", &mut v), vec!["/total"]);
    assert_eq!(v, json!({"customer": {"name": "Bo"}}));
    // A tool no `allow` rule names keeps everything.
    let mut v = json!({"total": 3});
    assert_eq!(p.apply("other", &mut v), Vec::<String>::new());
    // A result that is not the allowed shape: a scalar where an object was allowed into.
    let mut v = json!("text");
    assert_eq!(p.apply("shop__list", &mut v), vec![""]);
    assert_eq!(v, Value::Null);
    // `""` allows everything.
    let all = policy(json!([{"tools": ["*"], "allow": [""]}]));
    let mut v = json!({"a": [1, {"b": 2}]});
    assert_eq!(all.apply("t", &mut v), Vec::<String>::new());
    assert_eq!(v, json!({"a": [1, {"b": 2}]}));
    // An empty list allows nothing.
    let none = policy(json!([{"tools": ["*"], "allow": []}]));
    let mut v = json!({"a": 1});
    assert_eq!(none.apply("t", &mut v), vec![""]);
    assert_eq!(v, Value::Null);
}

#[test]
fn the_section_is_checked_with_exact_paths() {
    use crate::ConfigErrorKind as K;
    let cases: &[(Value, &[(&str, K)])] = &[
        (json!({}), &[("outputs", K::WrongType)]),
        (json!([1]), &[("outputs[0]", K::WrongType)]),
        (
            json!([{"tools": ["*"], "mask": ["/a"], "masks": []}]),
            &[("outputs[0].masks", K::UnknownKey)],
        ),
        (
            json!([{"mask": ["/a"]}]),
            &[("outputs[0]", K::MissingField)],
        ),
        (
            json!([{"tools": [], "mask": ["/a"]}]),
            &[("outputs[0].tools", K::InvalidValue)],
        ),
        (
            json!([{"tools": ["a["], "mask": ["/a"]}]),
            &[("outputs[0].tools[0]", K::InvalidGlob)],
        ),
        (
            json!([{"tools": ["*"]}]),
            &[("outputs[0]", K::MissingField)],
        ),
        (
            json!([{"tools": ["*"], "mask": ["/ok", "password"], "redact": ["/x~2"]}]),
            &[
                ("outputs[0].mask[1]", K::InvalidPointer),
                ("outputs[0].redact[0]", K::InvalidPointer),
            ],
        ),
        (
            json!([{"tools": ["*"], "mask": "/a"}]),
            &[("outputs[0].mask", K::WrongType)],
        ),
        (
            json!([{"tools": ["*"], "redact": [3]}]),
            &[("outputs[0].redact[0]", K::WrongType)],
        ),
        (
            json!([{"tools": ["*"], "allow": ["/ok", "name"]}]),
            &[("outputs[0].allow[1]", K::InvalidPointer)],
        ),
    ];
    for (outputs, want) in cases {
        let errors = Config::from_json_str(&json!({ "outputs": outputs }).to_string())
            .unwrap_err()
            .errors;
        let got: Vec<(&str, K)> = errors.iter().map(|e| (e.path(), e.kind())).collect();
        assert_eq!(got, *want, "{outputs}: {errors:?}");
    }
    let errors = Config::from_json_str(r#"{"outputs": [{"tools": ["*"], "mask": ["secret"]}]}"#)
        .unwrap_err()
        .errors;
    assert_eq!(
        errors[0].to_string(),
        "outputs[0].mask[0]: `secret` is not a JSON Pointer: it must be \"\" (the whole result) or start with `/` (e.g. \"/secret\")"
    );
    let errors = Config::from_json_str(r#"{"outputs": [{"tools": ["*"]}]}"#)
        .unwrap_err()
        .errors;
    assert_eq!(
        errors[0].to_string(),
        "outputs[0]: needs `mask`, `redact` (the JSON Pointers to hide), `allow` (the only ones to keep) or `strictSchema`"
    );
    let errors = Config::from_json_str(r#"{"outputs": [{"tools": ["*"], "strictSchema": "yes"}]}"#)
        .unwrap_err()
        .errors;
    let got: Vec<(&str, K)> = errors.iter().map(|e| (e.path(), e.kind())).collect();
    assert_eq!(
        got,
        [
            ("outputs[0].strictSchema", K::WrongType),
            ("outputs[0]", K::MissingField)
        ]
    );
    let p = policy(json!([{"tools": ["billing__*"], "strictSchema": true}]));
    assert!(p.rules()[0].is_strict_schema());
    assert!(p.strict_schema("billing__charge") && !p.strict_schema("crm__get"));
    // Absent: no rules.
    assert!(Config::from_json_str("{}").unwrap().outputs.is_empty());
    let p = policy(json!([{"tools": ["a", "b"], "mask": ["/x"], "redact": ["", "/*/y"]}]));
    let rule = &p.rules()[0];
    assert_eq!(rule.tools(), ["a", "b"]);
    let paths = |ps: &[PathPattern]| {
        ps.iter()
            .map(|p| p.as_str().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(paths(rule.mask()), ["/x"]);
    assert_eq!(paths(rule.redact()), ["", "/*/y"]);
}

#[test]
fn the_fingerprint_changes_with_the_rules_for_the_tool_only() {
    let none = policy(json!([]));
    let masked = policy(json!([{"tools": ["db__*"], "mask": ["/password"]}]));
    let redacted = policy(json!([{"tools": ["db__*"], "redact": ["/password"]}]));
    let allowed = policy(json!([{"tools": ["db__*"], "allow": ["/password"]}]));
    let strict = policy(json!([
        {"tools": ["db__*"], "mask": ["/password"], "strictSchema": true}
    ]));
    let prints: Vec<u64> = [&none, &masked, &redacted, &allowed, &strict]
        .iter()
        .map(|p| p.fingerprint("db__get_user"))
        .collect();
    for (i, a) in prints.iter().enumerate() {
        for b in &prints[i + 1..] {
            assert_ne!(a, b, "{prints:?}");
        }
    }
    // Rules for other tools do not change a tool's view; the same rules give the same digest.
    assert_eq!(none.fingerprint("fs__read"), masked.fingerprint("fs__read"));
    assert_eq!(
        masked.fingerprint("db__get_user"),
        policy(json!([{"tools": ["db__get_user"], "mask": ["/password"]}]))
            .fingerprint("db__get_user")
    );
}

/// Every problem of the section at once, each at its path with its kind and words: within a
/// rule, the values read wrong (unknown keys, wrong types) in written order before what the
/// rule's conversion finds (globs, pointers, what is missing). `tools` given with a wrong value
/// is reported once (not also missing), and `allow` given with one counts as given.
#[test]
fn every_problem_of_the_section_at_once() {
    use crate::ConfigErrorKind as K;
    let json = r#"{"outputs": [
        {"tools": "fs__*", "mask": ["/a", 7], "stict": true},
        3,
        {"tools": ["a[", "ok"], "redact": ["nope"], "strictSchema": "yes"},
        {"allow": "x"},
        {"tools": ["*"]}
    ]}"#;
    let errors = Config::from_json_str(json).unwrap_err().errors;
    let got: Vec<(&str, K, &str)> = errors
        .iter()
        .map(|e| (e.path(), e.kind(), e.message()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "outputs[0].stict",
                K::UnknownKey,
                "unknown key `stict`; allowed keys: `tools`, `mask`, `redact`, `allow`, `strictSchema`"
            ),
            (
                "outputs[0].tools",
                K::WrongType,
                "expected an array of strings, found a string (\"fs__*\")"
            ),
            (
                "outputs[0].mask[1]",
                K::WrongType,
                "expected a string, found a number (7)"
            ),
            (
                "outputs[1]",
                K::WrongType,
                "expected an object, found a number (3)"
            ),
            (
                "outputs[2].strictSchema",
                K::WrongType,
                "expected a boolean, found a string (\"yes\")"
            ),
            (
                "outputs[2].tools[0]",
                K::InvalidGlob,
                "invalid glob `a[`: unclosed character class; missing ']'"
            ),
            (
                "outputs[2].redact[0]",
                K::InvalidPointer,
                "`nope` is not a JSON Pointer: it must be \"\" (the whole result) or start with `/` (e.g. \"/nope\")"
            ),
            (
                "outputs[3].allow",
                K::WrongType,
                "expected an array of strings, found a string (\"x\")"
            ),
            (
                "outputs[3]",
                K::MissingField,
                "missing `tools` (the tool-name globs whose results this rule changes)"
            ),
            (
                "outputs[4]",
                K::MissingField,
                "needs `mask`, `redact` (the JSON Pointers to hide), `allow` (the only ones to keep) or `strictSchema`"
            ),
        ]
    );
    // A wrong element keeps the others' places: the bad glob is named at its own index.
    let errors = Config::from_json_str(r#"{"outputs": [{"tools": [1, "b["], "mask": ["/a"]}]}"#)
        .unwrap_err()
        .errors;
    let got: Vec<(&str, K)> = errors.iter().map(|e| (e.path(), e.kind())).collect();
    assert_eq!(
        got,
        [
            ("outputs[0].tools[0]", K::WrongType),
            ("outputs[0].tools[1]", K::InvalidGlob)
        ]
    );
}
