//! An upstream server's own form on the terminal (`codemode run`): one prompt per field, in
//! the order of their names (rmcp keeps a form's fields sorted), its default in brackets (Enter
//! keeps it), choices numbered, `-` declines the whole form.

use codemode_policies::neutralize;
use serde_json::{Number, Value};

/// What one field's line of input gave.
pub(super) enum Field {
    Value(Value),
    /// Empty input on a field with no default: left out.
    Omitted,
    Decline,
    /// Not a value of the field: the reason, and the field is asked again.
    Invalid(String),
}

/// The field's choices, `(value, title)`: `enum` (with `enumNames`), `oneOf`/`anyOf` of
/// `const`s, for a single value or for an array's items.
pub(super) fn field_choices(property: &Value) -> Option<Vec<(Value, String)>> {
    let source = match property.get("type").and_then(Value::as_str) {
        Some("array") => property.get("items")?,
        _ => property,
    };
    if let Some(values) = source.get("enum").and_then(Value::as_array) {
        let names = source.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let title = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map_or_else(|| plain(v), str::to_string);
                    (v.clone(), title)
                })
                .collect(),
        );
    }
    let items = source
        .get("oneOf")
        .or_else(|| source.get("anyOf"))
        .and_then(Value::as_array)?;
    Some(
        items
            .iter()
            .filter_map(|item| {
                let v = item.get("const")?.clone();
                let title = item
                    .get("title")
                    .and_then(Value::as_str)
                    .map_or_else(|| plain(&v), str::to_string);
                Some((v, title))
            })
            .collect(),
    )
}

/// A value as a person reads it: strings without quotes.
fn plain(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// The prompt line of one field (and its numbered choices).
pub(super) fn prompt_text(name: &str, property: &Value, required: bool) -> String {
    let title = property
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or(name);
    let mut text = format!("  {}", neutralize(title));
    if let Some(description) = property.get("description").and_then(Value::as_str) {
        text.push_str(&format!(" — {}", neutralize(description)));
    }
    let kind = property.get("type").and_then(Value::as_str).unwrap_or("");
    if let Some(choices) = field_choices(property) {
        text.push('\n');
        for (i, (_, title)) in choices.iter().enumerate() {
            text.push_str(&format!("      {}) {}\n", i + 1, neutralize(title)));
        }
        text.push_str(if kind == "array" {
            "    numbers separated by commas"
        } else {
            "    a number"
        });
    } else if kind == "boolean" {
        text.push_str(" (y/n)");
    }
    match property.get("default") {
        Some(default) => {
            let shown = shown_default(default, field_choices(property).as_deref());
            text.push_str(&format!(" [{}]", neutralize(&shown)));
        }
        None if required => text.push_str(" (required)"),
        None => {}
    }
    text.push_str(": ");
    text
}

/// A default as the person picks it: a choice as its number and title (`2) Rachel`, never
/// its bare value, which a title could contradict), several as `1) Guitar; 3) Violin`.
fn shown_default(default: &Value, choices: Option<&[(Value, String)]>) -> String {
    let one = |v: &Value| match choices.and_then(|c| c.iter().position(|(value, _)| value == v)) {
        Some(i) => format!("{}) {}", i + 1, choices.map_or("", |c| c[i].1.as_str())),
        None => plain(v),
    };
    match default {
        Value::Array(items) => items.iter().map(one).collect::<Vec<_>>().join("; "),
        other => one(other),
    }
}

/// Reads `line` as a value of the field.
pub(super) fn parse(property: &Value, line: &str, required: bool) -> Field {
    let line = line.trim();
    if line == "-" {
        return Field::Decline;
    }
    if line.is_empty() {
        return match property.get("default") {
            Some(default) => Field::Value(default.clone()),
            None if required => Field::Invalid("this field is required".into()),
            None => Field::Omitted,
        };
    }
    if let Some(choices) = field_choices(property) {
        // Only numbers: a value typed as a word could be one whose title says otherwise.
        let pick = |word: &str| -> Option<Value> {
            let n = word.trim().parse::<usize>().ok()?;
            choices.get(n.wrapping_sub(1)).map(|(v, _)| v.clone())
        };
        let range = format!("type a number from 1 to {}", choices.len());
        if property.get("type").and_then(Value::as_str) == Some("array") {
            let picked: Option<Vec<Value>> = line.split(',').map(pick).collect();
            return picked.map_or(Field::Invalid(range), |v| Field::Value(Value::Array(v)));
        }
        return pick(line).map_or(Field::Invalid(range), Field::Value);
    }
    match property.get("type").and_then(Value::as_str) {
        Some("boolean") => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Field::Value(Value::Bool(true)),
            "n" | "no" | "false" => Field::Value(Value::Bool(false)),
            _ => Field::Invalid("type y or n".into()),
        },
        Some("integer") => line.parse::<i64>().map_or_else(
            |_| Field::Invalid("type a whole number".into()),
            |n| in_range(property, n as f64, Value::from(n)),
        ),
        Some("number") => match line.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => in_range(property, n.as_f64().unwrap_or(0.0), Value::Number(n)),
            None => Field::Invalid("type a number".into()),
        },
        _ => Field::Value(Value::String(line.to_string())),
    }
}

fn in_range(property: &Value, n: f64, value: Value) -> Field {
    let min = property.get("minimum").and_then(Value::as_f64);
    let max = property.get("maximum").and_then(Value::as_f64);
    if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
        let show = |b: Option<f64>| b.map_or_else(|| "…".to_string(), |b| b.to_string());
        return Field::Invalid(format!("from {} to {}", show(min), show(max)));
    }
    Field::Value(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value(property: Value, line: &str, required: bool) -> Option<Value> {
        match parse(&property, line, required) {
            Field::Value(v) => Some(v),
            _ => None,
        }
    }

    #[test]
    fn each_kind_of_field_reads_its_values() {
        let pets = json!({"type": "string", "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"], "default": "pet-1"});
        let fish = json!({"type": "array", "items": {"anyOf": [{"const": "f1", "title": "Tuna"}, {"const": "f2", "title": "Trout"}]}, "default": ["f1"]});
        let int = json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 42});
        let cases = [
            (pets.clone(), "", Some(json!("pet-1"))),
            (pets.clone(), "2", Some(json!("pet-2"))),
            (pets.clone(), "pet-2", None),
            (pets.clone(), "3", None),
            (fish.clone(), "", Some(json!(["f1"]))),
            (fish.clone(), "2, 1", Some(json!(["f2", "f1"]))),
            (fish, "2,9", None),
            (int.clone(), "", Some(json!(42))),
            (int.clone(), "7", Some(json!(7))),
            (int.clone(), "101", None),
            (int, "7.5", None),
            (
                json!({"type": "number", "default": 2.75}),
                "2.5",
                Some(json!(2.5)),
            ),
            (json!({"type": "boolean"}), "Y", Some(json!(true))),
            (json!({"type": "boolean"}), "no", Some(json!(false))),
            (json!({"type": "boolean"}), "maybe", None),
            (json!({"type": "string"}), "  Ada  ", Some(json!("Ada"))),
        ];
        for (property, line, want) in cases {
            assert_eq!(
                value(property.clone(), line, false),
                want,
                "{property} {line:?}"
            );
        }
        // A multi-select default shows its numbered titles, so that `a, b` cannot read as two.
        let tags =
            json!({"type": "array", "items": {"enum": ["a, b", "a", "b"]}, "default": ["a, b"]});
        assert_eq!(
            prompt_text("tags", &tags, false),
            "  tags\n      1) a, b\n      2) a\n      3) b\n    numbers separated by commas [1) a, b]: "
        );
        let name = json!({"type": "string"});
        assert!(matches!(parse(&name, "", true), Field::Invalid(_)));
        assert!(matches!(parse(&name, "", false), Field::Omitted));
        assert!(matches!(parse(&name, " - ", false), Field::Decline));
    }

    #[test]
    fn a_prompt_shows_title_description_choices_and_default_neutralised() {
        let property = json!({"title": "Pet\u{1b}[2J", "description": "Choose", "type": "string",
            "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs\u{202e}"], "default": "pet-1"});
        assert_eq!(
            prompt_text("petType", &property, false),
            "  Pet\\u001b[2J — Choose\n      1) Cats\n      2) Dogs\\u202e\n    a number [1) Cats]: "
        );
        assert_eq!(
            prompt_text("name", &json!({"type": "string"}), true),
            "  name (required): "
        );
    }
}
