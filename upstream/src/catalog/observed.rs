//! Result types observed from real calls, for tools that declare no `outputSchema`: so that
//! `get_tools` can type a tool's result once a script has called it, instead of leaving it
//! `Promise<unknown>` forever.
//!
//! What is observed is what the script received (after the output policy masked and removed
//! fields), so a type never names a field the caller may not see. Observations are kept per
//! profile (two profiles may see different fields of one tool) and per tool definition: when
//! the upstream lists its tools again (a `tools/list_changed`, a reconnection), the tool's
//! earlier observations no longer count.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

/// The most schema nodes (values, properties, alternatives) one observed type keeps; past it a
/// part is `unknown`, so a huge or varied result cannot make the declaration huge.
const MAX_NODES: usize = 48;
/// The most array elements looked at per array: a list's element type is the merge of its
/// first few.
const MAX_ELEMENTS: usize = 8;
/// The most alternatives (`a | b`) one position keeps before it becomes `unknown`.
const MAX_ALTERNATIVES: usize = 3;
/// The longest key an observed type names, in characters; an object with a longer one is a map
/// of unknown keys.
const MAX_KEY_CHARS: usize = 64;
/// The most (profile, tool) pairs remembered: past it, nothing new is observed.
const MAX_ENTRIES: usize = 4096;

/// One observed type: a JSON Schema (a small subset: `type`, `properties`, `required`,
/// `items`, `anyOf`) and how many results it is merged from.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedType {
    /// The merged schema of the results seen.
    pub schema: Value,
    /// How many results it was merged from.
    pub calls: u64,
}

struct Entry {
    /// The tool's input schema when it was observed: the same `Arc` while the upstream's tool
    /// list is the same one (the list read again replaces it), so comparing pointers tells
    /// whether the observation is of today's tool.
    definition: Arc<Map<String, Value>>,
    observed: ObservedType,
}

/// The observed result types of a pool's tools, by profile and tool name.
#[derive(Default)]
pub(crate) struct ObservedResults {
    entries: Mutex<HashMap<(String, String), Entry>>,
}

impl std::fmt::Debug for ObservedResults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.entries.lock().map_or(0, |e| e.len());
        f.debug_struct("ObservedResults")
            .field("entries", &n)
            .finish()
    }
}

impl ObservedResults {
    /// Merges the type of `value`, a result of `tool` as a script under `profile` received it,
    /// into what is known; `definition` identifies the tool's current definition (its input
    /// schema as listed).
    pub fn record(
        &self,
        profile: &str,
        tool: &str,
        definition: &Arc<Map<String, Value>>,
        value: &Value,
    ) {
        let seen = infer(value, &mut MAX_NODES.clone());
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let full = entries.len() >= MAX_ENTRIES;
        let key = (profile.to_string(), tool.to_string());
        let fresh = || Entry {
            definition: definition.clone(),
            observed: ObservedType {
                schema: seen.clone(),
                calls: 1,
            },
        };
        match entries.get_mut(&key) {
            Some(entry) if Arc::ptr_eq(&entry.definition, definition) => {
                let merged = merge(&entry.observed.schema, &seen);
                entry.observed.schema = prune(&merged, &mut MAX_NODES.clone());
                entry.observed.calls = entry.observed.calls.saturating_add(1);
            }
            Some(entry) => *entry = fresh(),
            None if !full => {
                entries.insert(key, fresh());
            }
            None => {}
        }
    }

    /// The type observed for `tool` under `profile`, if it was observed with `definition`.
    pub fn get(
        &self,
        profile: &str,
        tool: &str,
        definition: &Arc<Map<String, Value>>,
    ) -> Option<ObservedType> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(&(profile.to_string(), tool.to_string()))
            .filter(|e| Arc::ptr_eq(&e.definition, definition))
            .map(|e| e.observed.clone())
    }
}

/// The schema of one value, spending at most `budget` nodes.
fn infer(value: &Value, budget: &mut usize) -> Value {
    if *budget == 0 {
        return json!({});
    }
    *budget -= 1;
    match value {
        Value::Null => json!({"type": "null"}),
        Value::Bool(_) => json!({"type": "boolean"}),
        Value::Number(_) => json!({"type": "number"}),
        Value::String(_) => json!({"type": "string"}),
        Value::Array(items) => {
            let mut element: Option<Value> = None;
            for item in items.iter().take(MAX_ELEMENTS) {
                let seen = infer(item, budget);
                element = Some(match element {
                    Some(known) => merge(&known, &seen),
                    None => seen,
                });
            }
            match element {
                Some(items) => json!({"type": "array", "items": items}),
                None => json!({"type": "array"}),
            }
        }
        // A key longer than a name (a result keyed by content) is not named: the object is a
        // map of unknown keys, so no result can make the declaration long.
        Value::Object(map) if map.keys().any(|k| k.chars().count() > MAX_KEY_CHARS) => {
            json!({"type": "object"})
        }
        Value::Object(map) => {
            let mut properties = Map::new();
            for (key, v) in map {
                if *budget == 0 {
                    // The rest of the keys are not named: the object may have more.
                    return json!({"type": "object", "properties": properties,
                                  "required": required_of(&properties)});
                }
                properties.insert(key.clone(), infer(v, budget));
            }
            json!({"type": "object", "properties": properties,
                   "required": required_of(&properties), "additionalProperties": false})
        }
    }
}

fn required_of(properties: &Map<String, Value>) -> Vec<String> {
    properties.keys().cloned().collect()
}

/// The schema of values of either schema: objects merge their properties (a key missing from
/// either becomes optional), arrays their elements; different kinds become alternatives.
fn merge(a: &Value, b: &Value) -> Value {
    if a == b {
        return a.clone();
    }
    if is_unknown(a) || is_unknown(b) {
        return json!({});
    }
    let mut alternatives = variants(a);
    for v in variants(b) {
        match alternatives
            .iter()
            .position(|known| known["type"] == v["type"])
        {
            Some(i) => alternatives[i] = merge_same_kind(&alternatives[i], &v),
            None => alternatives.push(v),
        }
    }
    match alternatives.len() {
        1 => alternatives.remove(0),
        n if n <= MAX_ALTERNATIVES => json!({"anyOf": alternatives}),
        _ => json!({}),
    }
}

fn is_unknown(schema: &Value) -> bool {
    schema.as_object().is_some_and(Map::is_empty)
}

fn variants(schema: &Value) -> Vec<Value> {
    match schema.get("anyOf").and_then(Value::as_array) {
        Some(list) => list.clone(),
        None => vec![schema.clone()],
    }
}

fn merge_same_kind(a: &Value, b: &Value) -> Value {
    match a["type"].as_str() {
        Some("object") => {
            let (pa, pb) = (&a["properties"], &b["properties"]);
            let mut properties = pa.as_object().cloned().unwrap_or_default();
            for (key, schema) in pb.as_object().into_iter().flatten() {
                let merged = match properties.get(key) {
                    Some(known) => merge(known, schema),
                    None => schema.clone(),
                };
                properties.insert(key.clone(), merged);
            }
            let in_both = |key: &String| {
                [a, b].iter().all(|s| {
                    s["required"]
                        .as_array()
                        .is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key.as_str())))
                })
            };
            let required: Vec<String> = properties.keys().filter(|k| in_both(k)).cloned().collect();
            let closed = a["additionalProperties"] == false && b["additionalProperties"] == false;
            let mut out = json!({"type": "object", "properties": properties, "required": required});
            if closed {
                out["additionalProperties"] = Value::Bool(false);
            }
            out
        }
        Some("array") => match (a.get("items"), b.get("items")) {
            (Some(x), Some(y)) => json!({"type": "array", "items": merge(x, y)}),
            (Some(x), None) | (None, Some(x)) => json!({"type": "array", "items": x}),
            (None, None) => json!({"type": "array"}),
        },
        _ => a.clone(),
    }
}

/// `schema` with at most `budget` nodes: deeper and later parts become `unknown` (`{}`).
fn prune(schema: &Value, budget: &mut usize) -> Value {
    if *budget == 0 || is_unknown(schema) {
        return json!({});
    }
    *budget -= 1;
    let mut out = schema.clone();
    if let Some(list) = schema.get("anyOf").and_then(Value::as_array) {
        out["anyOf"] = Value::Array(list.iter().map(|v| prune(v, budget)).collect());
    }
    if let Some(items) = schema.get("items") {
        out["items"] = prune(items, budget);
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let mut kept = Map::new();
        for (key, v) in properties {
            if *budget == 0 {
                out.as_object_mut()
                    .map(|o| o.remove("additionalProperties"));
                break;
            }
            kept.insert(key.clone(), prune(v, budget));
        }
        out["required"] = json!(
            out["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|k| k.as_str().is_some_and(|k| kept.contains_key(k)))
                .cloned()
                .collect::<Vec<_>>()
        );
        out["properties"] = Value::Object(kept);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observe(values: &[Value]) -> Value {
        let results = ObservedResults::default();
        let definition = Arc::new(Map::new());
        for v in values {
            results.record("p", "t", &definition, v);
        }
        results.get("p", "t", &definition).unwrap().schema
    }

    #[test]
    fn one_result_gives_its_shape() {
        assert_eq!(
            observe(&[json!({"content": "x", "n": 1})]),
            json!({"type": "object", "properties": {"content": {"type": "string"},
                   "n": {"type": "number"}}, "required": ["content", "n"],
                   "additionalProperties": false})
        );
        assert_eq!(observe(&[json!("Echo: hi")]), json!({"type": "string"}));
    }

    #[test]
    fn results_merge_keys_missing_from_one_become_optional() {
        assert_eq!(
            observe(&[json!({"a": 1, "b": [1]}), json!({"a": null, "c": "x"})]),
            json!({"type": "object", "properties": {
                       "a": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                       "b": {"type": "array", "items": {"type": "number"}},
                       "c": {"type": "string"}},
                   "required": ["a"], "additionalProperties": false})
        );
    }

    #[test]
    fn too_many_kinds_become_unknown() {
        assert_eq!(
            observe(&[json!(1), json!("x"), json!(true), json!(null)]),
            json!({})
        );
        assert_eq!(
            observe(&[json!([1, "x", true, null])]),
            json!({"type": "array", "items": {}})
        );
    }

    #[test]
    fn a_huge_result_is_bounded() {
        let wide: Map<String, Value> = (0..500).map(|i| (format!("k{i}"), json!(i))).collect();
        let schema = observe(&[Value::Object(wide.clone()), Value::Object(wide)]);
        let named = schema["properties"].as_object().unwrap().len();
        assert_eq!(named, MAX_NODES - 1);
        // Not every key is named, so the object is not said to be closed.
        assert_eq!(schema.get("additionalProperties"), None);
        let mut deep = json!(1);
        for _ in 0..200 {
            deep = json!({ "d": deep });
        }
        let text = serde_json::to_string(&observe(&[deep])).unwrap();
        assert!(text.len() < 4_000, "{}", text.len());
    }

    #[test]
    fn a_long_key_is_not_named() {
        let key = "k".repeat(MAX_KEY_CHARS + 1);
        assert_eq!(
            observe(&[json!({ key: 1, "a": 2 })]),
            json!({"type": "object"})
        );
        let fits = "k".repeat(MAX_KEY_CHARS);
        assert_eq!(
            observe(&[json!({ fits.clone(): 1 })])["properties"][&fits],
            json!({"type": "number"})
        );
    }

    #[test]
    fn a_new_definition_starts_over() {
        let results = ObservedResults::default();
        let old = Arc::new(Map::new());
        results.record("p", "t", &old, &json!(1));
        results.record("p", "t", &old, &json!(2));
        assert_eq!(results.get("p", "t", &old).unwrap().calls, 2);
        let new = Arc::new(Map::new());
        assert_eq!(results.get("p", "t", &new), None);
        results.record("p", "t", &new, &json!("x"));
        assert_eq!(
            results.get("p", "t", &new).unwrap(),
            ObservedType {
                schema: json!({"type": "string"}),
                calls: 1
            }
        );
        // Kept per profile.
        assert_eq!(results.get("q", "t", &new), None);
    }
}
