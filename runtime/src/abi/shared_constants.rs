//! The ABI constants both sides define must agree. The guest is built with its own toolchain
//! and cannot depend on this crate, so its `guest/src/abi.rs` is read as text and its
//! `const NAME: TYPE = VALUE;` items compared with this crate's.

use std::collections::BTreeMap;

const GUEST_ABI: &str = include_str!("../../../guest/src/abi.rs");
const HOST_ABI: &str = include_str!("../abi.rs");

/// A host constant is part of the shared ABI (and must exist in the guest too) when its name
/// starts with one of these; the rest (import module name, size limits) are host policy.
const SHARED_PREFIXES: [&str; 2] = ["ABI_", "STATUS_"];

/// A parsed `const` item: its type and its value (an integer when it is one, else the source
/// text without whitespace).
#[derive(Debug, PartialEq, Eq)]
struct Constant {
    ty: String,
    value: Value,
}

#[derive(Debug, PartialEq, Eq)]
enum Value {
    Integer(u128),
    Text(String),
}

/// Every top-level `const NAME: TYPE = VALUE;` of a Rust source, whatever its visibility.
/// Comment lines are skipped; an item may span lines.
fn constants(source: &str) -> Result<BTreeMap<String, Constant>, String> {
    let code: String = source
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = BTreeMap::new();
    let mut rest = code.as_str();
    while let Some(at) = find_keyword(rest, "const") {
        rest = &rest[at + "const".len()..];
        let after_keyword = rest.trim_start();
        let name_len = after_keyword
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(after_keyword.len());
        let name = &after_keyword[..name_len];
        if name.is_empty()
            || name == "fn"
            || !after_keyword[name_len..].trim_start().starts_with(':')
        {
            // `const fn`, `const {}` blocks and the like are not constant items.
            continue;
        }
        let item = &after_keyword[name_len..];
        let end = item
            .find(';')
            .ok_or_else(|| format!("`const {name}` without `;`"))?;
        let (ty, value) = item[..end]
            .trim_start()
            .trim_start_matches(':')
            .split_once('=')
            .ok_or_else(|| format!("`const {name}` without a value"))?;
        let constant = Constant {
            ty: squash(ty),
            value: parse_value(value),
        };
        if found.insert(name.to_string(), constant).is_some() {
            return Err(format!("`{name}` is defined twice"));
        }
        rest = &item[end + 1..];
    }
    Ok(found)
}

/// The byte offset of `keyword` as a whole word in `text`.
fn find_keyword(text: &str, keyword: &str) -> Option<usize> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(offset) = text[from..].find(keyword) {
        let at = from + offset;
        let before = text[..at].chars().next_back();
        let after = text[at + keyword.len()..].chars().next();
        if !before.is_some_and(is_word) && !after.is_some_and(is_word) {
            return Some(at);
        }
        from = at + keyword.len();
    }
    None
}

fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// An integer literal (`1`, `0x10`, `1_000`, `8u32`) as its value; anything else as text.
fn parse_value(text: &str) -> Value {
    let literal = squash(text).replace('_', "");
    let digits = ["u8", "u16", "u32", "u64", "u128", "usize"]
        .iter()
        .find_map(|suffix| literal.strip_suffix(suffix))
        .unwrap_or(&literal);
    let parsed = match digits.strip_prefix("0x") {
        Some(hex) => u128::from_str_radix(hex, 16),
        None => digits.parse(),
    };
    match parsed {
        Ok(n) => Value::Integer(n),
        Err(_) => Value::Text(squash(text)),
    }
}

fn is_shared(name: &str) -> bool {
    SHARED_PREFIXES
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// What differs between the guest's and the host's constants; empty when they agree.
fn mismatches(
    guest: &BTreeMap<String, Constant>,
    host: &BTreeMap<String, Constant>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, constant) in guest {
        match host.get(name) {
            None => problems.push(format!("`{name}` is in the guest but not in the runtime")),
            Some(other) if other != constant => problems.push(format!(
                "`{name}` differs: guest {constant:?}, runtime {other:?}"
            )),
            Some(_) => {}
        }
    }
    for name in host.keys().filter(|name| is_shared(name)) {
        if !guest.contains_key(name) {
            problems.push(format!("`{name}` is in the runtime but not in the guest"));
        }
    }
    problems
}

#[test]
fn the_guest_and_the_runtime_agree_on_the_abi_constants() {
    let guest = constants(GUEST_ABI).expect("guest/src/abi.rs");
    let host = constants(HOST_ABI).expect("runtime/src/abi.rs");
    assert!(
        guest.contains_key("ABI_VERSION"),
        "no ABI_VERSION parsed from guest/src/abi.rs: {guest:?}"
    );
    assert_eq!(mismatches(&guest, &host), Vec::<String>::new());
}

#[test]
fn the_parsed_host_constants_are_the_compiled_ones() {
    let host = constants(HOST_ABI).expect("runtime/src/abi.rs");
    let integer = |name: &str| match host.get(name).map(|c| &c.value) {
        Some(Value::Integer(n)) => *n,
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(integer("ABI_VERSION"), u128::from(super::ABI_VERSION));
    assert_eq!(integer("STATUS_DONE"), u128::from(super::STATUS_DONE));
    assert_eq!(integer("STATUS_PENDING"), u128::from(super::STATUS_PENDING));
    assert_eq!(
        host["IMPORT_MODULE"].value,
        Value::Text("\"codemode\"".into())
    );
}

#[test]
fn a_differing_value_or_a_missing_constant_is_reported() {
    let host = constants(
        "pub const ABI_VERSION: u32 = 1;\npub const STATUS_DONE: u32 = 0;\n\
         pub const STATUS_PENDING: u32 = 1;\npub const MAX_TOOL_NAME_BYTES: usize = 1024;",
    )
    .unwrap();
    let guest = constants(
        "/// doc with const in it\npub const ABI_VERSION: u32 = 2;\n\
         pub(crate) const STATUS_DONE: u32 =\n    0;\nconst EXTRA: u8 = 0x1_0;\n\
         const fn not_a_constant() {}",
    )
    .unwrap();
    assert_eq!(
        guest["EXTRA"],
        Constant {
            ty: "u8".into(),
            value: Value::Integer(16)
        }
    );
    assert_eq!(
        mismatches(&guest, &host),
        [
            "`ABI_VERSION` differs: guest Constant { ty: \"u32\", value: Integer(2) }, \
             runtime Constant { ty: \"u32\", value: Integer(1) }",
            "`EXTRA` is in the guest but not in the runtime",
            "`STATUS_PENDING` is in the runtime but not in the guest",
        ]
    );
}

#[test]
fn a_different_type_is_a_mismatch() {
    let host = constants("const STATUS_DONE: u32 = 0;").unwrap();
    let guest = constants("const STATUS_DONE: u64 = 0;").unwrap();
    assert_eq!(mismatches(&guest, &host).len(), 1);
}
