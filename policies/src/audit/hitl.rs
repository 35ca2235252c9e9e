//! What a `tool_call` record keeps of a `hitl_request`: its question, its options, the
//! human's answer, its `metadata` and how long the human had. A script chose all of it, so each
//! text is [`neutralize`](crate::neutralize)d and bounded, and `metadata` is cut to a bounded
//! number of values however large or deep the script made it.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::bounded;

/// The name of the built-in question tool (its alias, `human_intervention_request`, is the same
/// tool: `TOOL_ALIASES` of the profiles).
pub const HITL_REQUEST: &str = "hitl_request";
/// How long the human has per question when `timeoutMs` is not given.
pub const HITL_DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest `timeoutMs` a script may ask for (a longer one is cut to it).
pub const HITL_MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// The longest question kept, in characters (elided in the middle past it).
const QUESTION_CHARS: usize = 1000;
/// The longest option (and answer) kept, in characters.
const OPTION_CHARS: usize = 200;
/// The most options kept (the tool accepts no more).
const MAX_OPTIONS: usize = 50;
/// The longest string and key of `metadata` kept, in characters.
const METADATA_TEXT_CHARS: usize = 200;
/// The most values of `metadata` kept, containers included, in document order; the rest are
/// counted in a note (`"(12 more entries)"`).
const METADATA_VALUES: usize = 100;
/// The deepest nesting of `metadata` kept; a container below it is written as a note.
const METADATA_DEPTH: usize = 8;

/// Whether `tool` is `hitl_request`, under either of its names.
pub fn is_hitl_request(tool: &str) -> bool {
    tool == HITL_REQUEST
        || crate::profile::TOOL_ALIASES
            .iter()
            .any(|&(alias, name)| name == HITL_REQUEST && alias == tool)
}

/// A `hitl_request` as its record keeps it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HitlAudit {
    /// The question; `None` when it is not a string.
    pub(crate) question: Option<String>,
    /// The options that are strings; `None` when `options` is not an array.
    pub(crate) options: Option<Vec<String>>,
    /// `metadata`, bounded; `None` when not given.
    pub(crate) metadata: Option<Value>,
    /// The option chosen and confirmed.
    pub(crate) answer: Option<String>,
    /// The question's timeout, in seconds; `None` when `timeoutMs` is not a positive integer
    /// (the call fails without asking).
    timeout_seconds: Option<f64>,
}

impl HitlAudit {
    /// What the arguments of a `hitl_request` asked, before anyone answered.
    pub(crate) fn asked(args: &Value) -> Self {
        let timeout = match args.get("timeoutMs") {
            None | Some(Value::Null) => Some(HITL_DEFAULT_TIMEOUT),
            Some(v) => v
                .as_u64()
                .filter(|ms| *ms > 0)
                .map(|ms| Duration::from_millis(ms).min(HITL_MAX_TIMEOUT)),
        };
        HitlAudit {
            question: args
                .get("question")
                .and_then(Value::as_str)
                .map(|q| bounded(q, QUESTION_CHARS)),
            options: args.get("options").and_then(Value::as_array).map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .take(MAX_OPTIONS)
                    .map(|o| bounded(o, OPTION_CHARS))
                    .collect()
            }),
            metadata: args.get("metadata").map(bounded_metadata),
            answer: None,
            timeout_seconds: timeout.map(|t| t.as_secs_f64()),
        }
    }

    /// Takes the tool's `result`: the answer, when an option was chosen and confirmed. Returns
    /// the question's timeout in seconds when a human was asked (the result's `source` is
    /// `user` or `timeout`), `None` when nobody was (no human could be asked, or the arguments
    /// were refused).
    pub(crate) fn answered(&mut self, result: &Value) -> Option<f64> {
        let field = |name: &str| result.get(name).and_then(Value::as_str);
        if field("status") == Some("confirmed") {
            self.answer = field("selectedOption").map(|o| bounded(o, OPTION_CHARS));
        }
        matches!(field("source"), Some("user" | "timeout"))
            .then_some(self.timeout_seconds)
            .flatten()
    }
}

/// `metadata` as the audit keeps it: every string and key neutralised and bounded to
/// `METADATA_TEXT_CHARS`, at most `METADATA_VALUES` values and `METADATA_DEPTH` levels;
/// what is left out is counted in a note string where it was.
pub fn bounded_metadata(metadata: &Value) -> Value {
    let mut budget = METADATA_VALUES;
    bound(metadata, 0, &mut budget)
}

fn bound(value: &Value, depth: usize, budget: &mut usize) -> Value {
    *budget = budget.saturating_sub(1);
    match value {
        Value::String(s) => Value::String(bounded(s, METADATA_TEXT_CHARS)),
        Value::Array(_) | Value::Object(_) if depth >= METADATA_DEPTH => {
            Value::String(format!("(nested deeper than {METADATA_DEPTH} levels)"))
        }
        Value::Array(items) => {
            let mut kept = Vec::new();
            for (i, item) in items.iter().enumerate() {
                if *budget == 0 {
                    kept.push(more(items.len() - i, "items"));
                    break;
                }
                kept.push(bound(item, depth + 1, budget));
            }
            Value::Array(kept)
        }
        Value::Object(map) => {
            let mut kept = Map::new();
            for (i, (key, item)) in map.iter().enumerate() {
                if *budget == 0 {
                    kept.insert("…".into(), more(map.len() - i, "entries"));
                    break;
                }
                let item = bound(item, depth + 1, budget);
                kept.insert(bounded(key, METADATA_TEXT_CHARS), item);
            }
            Value::Object(kept)
        }
        scalar => scalar.clone(),
    }
}

fn more(count: usize, what: &str) -> Value {
    Value::String(format!("({count} more {what})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_is_neutralised_and_bounded() {
        assert_eq!(
            bounded_metadata(
                &json!({"ticket": 42, "note\u{1b}[2J": "a\u{e0041}b", "ok": [true, null]})
            ),
            json!({"ticket": 42, "note\\u001b[2J": "a\\u{e0041}b", "ok": [true, null]})
        );
        let long = "x".repeat(500);
        let Value::String(cut) = bounded_metadata(&json!(long)) else {
            panic!("a string stays a string")
        };
        assert_eq!(cut, bounded(&long, METADATA_TEXT_CHARS));
        assert!(cut.chars().count() < 250, "{cut}");
        // 300 numbers: the first 99 (the array itself is one value), then a note.
        let many: Vec<u32> = (0..300).collect();
        let kept = bounded_metadata(&json!(many));
        let kept = kept.as_array().unwrap();
        assert_eq!(kept.len(), 100);
        assert_eq!(
            (&kept[98], &kept[99]),
            (&json!(98), &json!("(201 more items)"))
        );
        let mut deep = json!("bottom");
        for _ in 0..20 {
            deep = json!({ "d": deep });
        }
        let mut at = &bounded_metadata(&deep);
        for _ in 0..METADATA_DEPTH {
            at = &at["d"];
        }
        assert_eq!(at, &json!("(nested deeper than 8 levels)"));
    }

    #[test]
    fn the_question_options_answer_and_timeout() {
        let args = json!({"question": "Deploy\u{1b}[1A?", "options": ["yes", "no", 3],
            "timeoutMs": 1500, "metadata": {"t": 1}});
        let mut asked = HitlAudit::asked(&args);
        assert_eq!(asked.question.as_deref(), Some("Deploy\\u001b[1A?"));
        assert_eq!(
            asked.options,
            Some(vec!["yes".to_string(), "no".to_string()])
        );
        assert_eq!(asked.metadata, Some(json!({"t": 1})));
        let confirmed = json!({"status": "confirmed", "selectedOption": "no", "source": "user"});
        assert_eq!(asked.answered(&confirmed), Some(1.5));
        assert_eq!(asked.answer.as_deref(), Some("no"));
        // A timeout's default option is nobody's answer; a question nobody could be asked has
        // no timeout.
        let mut asked = HitlAudit::asked(&json!({"question": "q", "options": ["a"]}));
        let timed_out = json!({"status": "timeout", "selectedOption": "a", "source": "timeout"});
        assert_eq!(asked.answered(&timed_out), Some(120.0));
        assert_eq!(asked.answer, None);
        let nobody = json!({"status": "canceled", "selectedOption": null, "source": "system"});
        assert_eq!(asked.answered(&nobody), None);
        let refused = HitlAudit::asked(&json!({"question": 1, "options": "a", "timeoutMs": -1}));
        assert_eq!(
            (refused.question, refused.options, refused.timeout_seconds),
            (None, None, None)
        );
        assert!(is_hitl_request("hitl_request") && is_hitl_request("human_intervention_request"));
        assert!(!is_hitl_request("search_tools"));
    }
}
