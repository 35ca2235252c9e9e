//! What a human reads before an upstream's sampling request may reach the client's model: who
//! asks, the system prompt, the model preferences and limits, and every message — text as
//! written, images and audio by type and size, never their bytes. Every string the upstream
//! chose is [`neutralize`]d, and its lines are indented under codemode's own, so that none can
//! pass for a line of codemode's.

use std::fmt::Write as _;
use std::time::Duration;

use codemode_policies::{Question, neutralize};
use serde_json::{Value, json};

/// The most characters of one text shown; the rest is counted, not shown.
const MAX_TEXT_CHARS: usize = 2000;
/// The most messages shown; the rest are counted.
const MAX_MESSAGES: usize = 20;

/// The form field of the answer, and the option that lets the request through.
pub(crate) const FIELD: &str = "decision";
pub(crate) const APPROVE: &str = "approve";

/// Who the request is made for, as the prompt names them.
pub(crate) struct Asking<'a> {
    pub(crate) server: &'a str,
    pub(crate) caller: &'a str,
    pub(crate) profile: Option<&'a str>,
    pub(crate) timeout: Duration,
}

/// The approval form of `params` (a `sampling/createMessage` request's parameters, as JSON).
pub(crate) fn sampling_question(asking: &Asking<'_>, params: &Value) -> Question {
    let mut message = format!(
        "[upstream server `{}` asks to use your model]\nDuring a call of a script of caller `{}`",
        neutralize(asking.server),
        neutralize(asking.caller)
    );
    if let Some(profile) = asking.profile {
        let _ = write!(message, " (profile `{}`)", neutralize(profile));
    }
    let _ = write!(
        message,
        ", upstream server `{}` asks the client's model to write a message.",
        neutralize(asking.server)
    );
    if let Some(system) = params.get("systemPrompt").and_then(Value::as_str) {
        let _ = write!(message, "\n\nSystem prompt:\n{}", indented(system));
    }
    let _ = write!(message, "\n\n{}", limits(params));
    if let Some(preferences) = params.get("modelPreferences").map(model_preferences) {
        let _ = write!(message, "\nModel preferences: {preferences}");
    }
    if let Some(tools) = params.get("tools") {
        let _ = write!(
            message,
            "
Tools the model may call: {}",
            names_of(tools)
        );
    }
    message.push_str(&messages(params));
    if let Some(metadata) = params.get("metadata").filter(|m| !m.is_null()) {
        let _ = write!(
            message,
            "\n\nMetadata (sent to the model's client too):\n{}",
            capped_json(metadata)
        );
    }
    let _ = write!(
        message,
        "\n\nNo answer within {} s refuses the request.",
        asking.timeout.as_secs()
    );
    let schema = json!({
        "type": "object",
        "properties": {FIELD: {
            "type": "string",
            "title": "Decision",
            "oneOf": [
                {"const": APPROVE, "title": "Let the model answer"},
                {"const": "decline", "title": "Refuse"},
            ],
        }},
        "required": [FIELD],
    });
    Question {
        message,
        schema: schema.as_object().cloned().unwrap_or_default(),
    }
}

/// `maxTokens`, and the temperature, stop sequences and context inclusion when given.
fn limits(params: &Value) -> String {
    let mut line = format!(
        "Max tokens: {}",
        params.get("maxTokens").and_then(Value::as_u64).unwrap_or(0)
    );
    if let Some(t) = params.get("temperature").and_then(Value::as_f64) {
        let _ = write!(line, "; temperature {}", rounded(t));
    }
    if let Some(stops) = params.get("stopSequences").and_then(Value::as_array) {
        let _ = write!(line, "; stop sequences {}", quoted_list(stops));
    }
    if let Some(context) = params.get("includeContext").and_then(Value::as_str) {
        let _ = write!(line, "; include context `{}`", neutralize(context));
    }
    line
}

/// A number as a person reads it: f32 values sent as JSON come back as 0.699999988…
fn rounded(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `modelPreferences`: its hints and its priorities.
fn model_preferences(preferences: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(hints) = preferences.get("hints") {
        parts.push(format!("hints {}", names_of(hints)));
    }
    for (key, name) in [
        ("costPriority", "cost"),
        ("speedPriority", "speed"),
        ("intelligencePriority", "intelligence"),
    ] {
        if let Some(p) = preferences.get(key).and_then(Value::as_f64) {
            parts.push(format!("{name} priority {}", rounded(p)));
        }
    }
    if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join(", ")
    }
}

/// The `name`s of an array of objects (model hints, tools), as [`quoted_list`] shows them.
fn names_of(list: &Value) -> String {
    let names: Vec<Value> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item.get("name"))
        .cloned()
        .collect();
    quoted_list(&names)
}

/// Strings in backquotes, neutralised, comma-separated.
fn quoted_list(items: &[Value]) -> String {
    items
        .iter()
        .map(|v| format!("`{}`", neutralize(v.as_str().unwrap_or_default())))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The messages, numbered, each content block on its own lines.
fn messages(params: &Value) -> String {
    let list = params
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = format!("\n\nMessages ({}):", list.len());
    for (i, message) in list.iter().take(MAX_MESSAGES).enumerate() {
        let role = neutralize(message.get("role").and_then(Value::as_str).unwrap_or("?"));
        let blocks = match message.get("content") {
            Some(Value::Array(blocks)) => blocks.iter().collect(),
            Some(block) => vec![block],
            None => Vec::new(),
        };
        for block in blocks {
            let _ = write!(out, "\n{}. {role}, {}", i + 1, content(block));
        }
        // Whatever else the message carries reaches the model's client as well.
        if let Some(extra) = message.as_object().map(|m| {
            m.iter()
                .filter(|(k, _)| *k != "role" && *k != "content")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<serde_json::Map<_, _>>()
        }) && !extra.is_empty()
        {
            let _ = write!(
                out,
                "\n{}. {role}, also:\n{}",
                i + 1,
                capped_json(&Value::Object(extra))
            );
        }
    }
    if list.len() > MAX_MESSAGES {
        let _ = write!(out, "\n… and {} more messages", list.len() - MAX_MESSAGES);
    }
    out
}

/// One content block: a text shown (within [`MAX_TEXT_CHARS`]); an image or audio by its MIME
/// type and size; anything else (a tool use, a tool result, a resource) as its JSON, within
/// the same bound, so that nothing the model reads is hidden from the person deciding.
fn content(block: &Value) -> String {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("?");
    match kind {
        "text" => {
            let text = block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let shown: String = text.chars().take(MAX_TEXT_CHARS).collect();
            let more = text.chars().count().saturating_sub(MAX_TEXT_CHARS);
            let mut out = format!("text:\n{}", indented(&shown));
            if more > 0 {
                let _ = write!(out, "\n    … ({more} more characters)");
            }
            out
        }
        "image" | "audio" => {
            let mime = block.get("mimeType").and_then(Value::as_str).unwrap_or("?");
            let data = block
                .get("data")
                .and_then(Value::as_str)
                .unwrap_or_default();
            format!(
                "{kind} ({}, {} bytes)",
                neutralize(mime),
                base64_decoded_len(data)
            )
        }
        other => format!("{} block:\n{}", neutralize(other), capped_json(block)),
    }
}

/// `value` as JSON, indented, neutralised, within [`MAX_TEXT_CHARS`].
fn capped_json(value: &Value) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    let shown: String = text.chars().take(MAX_TEXT_CHARS).collect();
    let more = text.chars().count().saturating_sub(MAX_TEXT_CHARS);
    let mut out = indented(&shown);
    if more > 0 {
        let _ = write!(out, "\n    … ({more} more characters)");
    }
    out
}

/// How many bytes base64 `data` stands for (without decoding it).
fn base64_decoded_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count().min(2);
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// `text`'s lines, each neutralised and indented by four spaces.
fn indented(text: &str) -> String {
    text.split('\n')
        .map(|line| format!("    {}", neutralize(line)))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asking() -> Asking<'static> {
        Asking {
            server: "everything",
            caller: "local",
            profile: Some("guarded"),
            timeout: Duration::from_secs(60),
        }
    }

    #[test]
    fn the_prompt_shows_the_messages_and_preferences_neutralised() {
        let params = json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "line one\nline\u{202e} two"}},
                {"role": "user", "content": [
                    {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
                    {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="},
                ]},
            ],
            "systemPrompt": "Be brief.\u{1b}[2J",
            "modelPreferences": {"hints": [{"name": "claude"}], "costPriority": 0.30000001192092896},
            "maxTokens": 100,
            "temperature": 0.699999988079071,
            "stopSequences": ["\n\n"],
            "tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}, {"name": "x\u{202e}"}],
        });
        let question = sampling_question(&asking(), &params);
        assert_eq!(
            question.message,
            "[upstream server `everything` asks to use your model]\n\
             During a call of a script of caller `local` (profile `guarded`), upstream server \
             `everything` asks the client's model to write a message.\n\n\
             System prompt:\n    Be brief.\\u001b[2J\n\n\
             Max tokens: 100; temperature 0.7; stop sequences `\\n\\n`\n\
             Model preferences: hints `claude`, cost priority 0.3\n\
             Tools the model may call: `get_weather`, `x\\u202e`\n\n\
             Messages (2):\n\
             1. user, text:\n    line one\n    line\\u202e two\n\
             2. user, image (image/png, 8 bytes)\n\
             2. user, audio (audio/wav, 4 bytes)\n\n\
             No answer within 60 s refuses the request."
        );
        assert_eq!(
            question.schema["properties"][FIELD]["oneOf"][0]["const"],
            APPROVE
        );
    }

    #[test]
    fn long_texts_and_many_messages_are_cut_and_counted() {
        let long = "x".repeat(MAX_TEXT_CHARS + 5);
        let one = json!({"role": "user", "content": {"type": "text", "text": "hi"}});
        let mut list =
            vec![json!({"role": "assistant", "content": {"type": "text", "text": long}})];
        list.extend(std::iter::repeat_n(one, MAX_MESSAGES + 2));
        let params = json!({"messages": list, "maxTokens": 5});
        let message = sampling_question(&asking(), &params).message;
        assert!(message.contains("\n    … (5 more characters)"), "{message}");
        assert!(message.contains("Messages (23):"), "{message}");
        assert!(message.contains("\n… and 3 more messages"), "{message}");
        assert!(!message.contains(&"x".repeat(MAX_TEXT_CHARS + 1)));
    }

    /// Red-team finding: a tool result's text and the request's metadata reached the model but
    /// the prompt said only `tool_result block`.
    #[test]
    fn every_block_and_field_the_model_gets_is_shown() {
        let params = json!({
            "messages": [
                {"role": "assistant", "content": [{"type": "tool_use", "id": "1", "name": "read", "input": {"path": "x"}}]},
                {"role": "user", "content": [{"type": "tool_result", "toolUseId": "1",
                    "content": [{"type": "text", "text": "HIDDEN\u{2028}INJECTION"}]}],
                 "_meta": {"k": "v"}},
            ],
            "metadata": {"note": "also\u{1b}[2J"},
            "maxTokens": 5,
        });
        let message = sampling_question(&asking(), &params).message;
        assert!(message.contains("1. assistant, tool_use block:\n    {\n      \"id\": \"1\",\n      \"input\": {\n        \"path\": \"x\"\n      },\n      \"name\": \"read\","), "{message}");
        assert!(
            message.contains("\"text\": \"HIDDEN\\u2028INJECTION\""),
            "{message}"
        );
        assert!(
            message.contains(
                "2. user, also:\n    {\n      \"_meta\": {\n        \"k\": \"v\"\n      }\n    }"
            ),
            "{message}"
        );
        assert!(message.contains("Metadata (sent to the model's client too):\n    {\n      \"note\": \"also\\u001b[2J\"\n    }"), "{message}");
    }

    #[test]
    fn base64_sizes_are_counted_without_decoding() {
        for (data, bytes) in [
            ("", 0),
            ("QQ==", 1),
            ("QUI=", 2),
            ("QUJD", 3),
            ("QUJDRA==", 4),
        ] {
            assert_eq!(base64_decoded_len(data), bytes, "{data}");
        }
    }
}
