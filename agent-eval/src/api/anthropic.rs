//! The Anthropic messages API: the request, the reply, the tool results.

use serde_json::{Value, json};

use super::wire::{Reply, ToolCall, ToolSpec, excerpt};

/// The `anthropic-version` header the request and reply shapes here follow.
pub(super) const VERSION: &str = "2023-06-01";

/// The reply's token cap (`max_tokens` is required by the API).
const MAX_TOKENS: u32 = 4096;

/// `tools`: each with its `input_schema`.
pub(super) fn tools(specs: &[ToolSpec]) -> Value {
    specs
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
        .collect()
}

/// The request body.
pub(super) fn request(model: &str, messages: &[Value], tools: &Value) -> Value {
    json!({"model": model, "max_tokens": MAX_TOKENS, "messages": messages, "tools": tools})
}

/// The reply's `content` blocks: the assistant message to keep, and what it asks.
pub(super) fn reply(body: &Value) -> Result<(Value, Reply), String> {
    let Some(content) = body.get("content").and_then(Value::as_array) else {
        return Err(format!(
            "the reply has no `content` array: {}",
            excerpt(&body.to_string())
        ));
    };
    let mut calls = Vec::new();
    let mut text = String::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            Some("tool_use") => calls.push(call(block)?),
            // Thinking and other blocks are kept in the message, not read.
            _ => {}
        }
    }
    let message = json!({"role": "assistant", "content": content});
    let reply = if calls.is_empty() {
        Reply::Answer(text)
    } else {
        Reply::Calls(calls)
    };
    Ok((message, reply))
}

/// A `tool_use` block: `{id, name, input}`.
fn call(block: &Value) -> Result<ToolCall, String> {
    let field = |key: &str| {
        block
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("a `tool_use` block has no string `{key}`: {block}"))
    };
    Ok(ToolCall {
        id: field("id")?.to_string(),
        name: field("name")?.to_string(),
        arguments: block.get("input").cloned().unwrap_or(Value::Null),
    })
}

/// One user message with a `tool_result` block per call, paired by `tool_use_id`.
pub(super) fn results(results: &[(ToolCall, String, bool)]) -> Value {
    let blocks: Vec<Value> = results
        .iter()
        .map(|(call, text, is_error)| {
            json!({"type": "tool_result", "tool_use_id": call.id, "content": text, "is_error": is_error})
        })
        .collect();
    json!({"role": "user", "content": blocks})
}
