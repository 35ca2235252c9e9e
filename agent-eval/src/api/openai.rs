//! OpenAI-compatible chat completions: the request, the reply, the tool results.

use serde_json::{Value, json};

use super::wire::{Reply, ToolCall, ToolSpec, excerpt};

/// `tools`: each a function whose `parameters` are the tool's input schema.
pub(super) fn tools(specs: &[ToolSpec]) -> Value {
    specs
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.input_schema,
            }})
        })
        .collect()
}

/// The request body.
pub(super) fn request(model: &str, messages: &[Value], tools: &Value) -> Value {
    json!({"model": model, "messages": messages, "tools": tools})
}

/// `choices[0].message`: the message to keep, and what it asks.
pub(super) fn reply(body: &Value) -> Result<(Value, Reply), String> {
    let message = body
        .pointer("/choices/0/message")
        .filter(|m| m.is_object())
        .ok_or_else(|| {
            format!(
                "the reply has no `choices[0].message`: {}",
                excerpt(&body.to_string())
            )
        })?;
    let calls = match message.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(calls)) => calls.iter().map(call).collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("`tool_calls` is not an array: {other}")),
    };
    let reply = if calls.is_empty() {
        let text = message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default();
        Reply::Answer(text.to_string())
    } else {
        Reply::Calls(calls)
    };
    Ok((message.clone(), reply))
}

/// One `tool_calls` entry: `{id, type: function, function: {name, arguments}}`, the arguments
/// a JSON text.
fn call(entry: &Value) -> Result<ToolCall, String> {
    let field = |pointer: &str| {
        entry
            .pointer(pointer)
            .and_then(Value::as_str)
            .ok_or_else(|| {
                format!(
                    "a tool call has no string `{}`: {entry}",
                    &pointer[1..].replace('/', ".")
                )
            })
    };
    let arguments = field("/function/arguments")?;
    // A model may send arguments that are not JSON: that is the model's mistake, told to it
    // as the tool's error rather than ending the case.
    let arguments = serde_json::from_str(arguments).unwrap_or(Value::String(arguments.to_string()));
    Ok(ToolCall {
        id: field("/id")?.to_string(),
        name: field("/function/name")?.to_string(),
        arguments,
    })
}

/// One `role: tool` message per call, paired by `tool_call_id`.
pub(super) fn results(results: &[(ToolCall, String, bool)]) -> Vec<Value> {
    results
        .iter()
        .map(|(call, text, _)| json!({"role": "tool", "tool_call_id": call.id, "content": text}))
        .collect()
}
