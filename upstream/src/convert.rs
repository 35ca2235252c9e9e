//! MCP ↔ JS values: a script's arguments become `tools/call` arguments, a `CallToolResult`
//! becomes the value (or the error) the script's promise settles with.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::Value;

use codemode_runtime::ToolError;

/// The script's `args` as MCP `arguments`, which must be a JSON object.
pub(crate) fn arguments(qualified: &str, args: Value) -> Result<JsonObject, ToolError> {
    match args {
        Value::Object(map) => Ok(map),
        other => Err(ToolError::failed(format!(
            "arguments to `{qualified}` must be an object, got {}",
            json_kind(&other)
        ))),
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The JS value of a tool result.
///
/// * `isError: true` → [`ToolError::Failed`] with the text blocks joined by newlines as the
///   message and `structuredContent` as `data`;
/// * `structuredContent` when present;
/// * otherwise one content block → that block's value, several → an array of them, none →
///   `null`. A text block's value is its text parsed as JSON when it is valid JSON, else the
///   text; any other block's value is the block itself as JSON (`{"type":"image",…}`).
pub(crate) fn tool_result(result: CallToolResult) -> Result<Value, ToolError> {
    if result.is_error == Some(true) {
        let text: Vec<&str> = result
            .content
            .iter()
            .filter_map(|b| b.as_text())
            .map(|t| t.text.as_str())
            .collect();
        let message = if text.is_empty() {
            "the tool reported an error without a message".to_string()
        } else {
            text.join("\n")
        };
        return Err(ToolError::Failed {
            message,
            data: result.structured_content,
        });
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    let mut values: Vec<Value> = result.content.into_iter().map(block).collect();
    Ok(match values.len() {
        0 => Value::Null,
        1 => values.pop().unwrap_or(Value::Null),
        _ => Value::Array(values),
    })
}

fn block(b: ContentBlock) -> Value {
    match b {
        ContentBlock::Text(t) => match serde_json::from_str::<Value>(&t.text) {
            Ok(v) => v,
            Err(_) => Value::String(t.text),
        },
        other => serde_json::to_value(&other).unwrap_or(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(v: Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn results() {
        let cases = [
            (
                json!({"content": [{"type": "text", "text": "hello"}]}),
                json!("hello"),
            ),
            (
                json!({"content": [{"type": "text", "text": "{\"a\":1}"}]}),
                json!({"a": 1}),
            ),
            (
                json!({"content": [{"type": "text", "text": "42"}]}),
                json!(42),
            ),
            (
                json!({"content": [{"type": "text", "text": " [1, 2] "}]}),
                json!([1, 2]),
            ),
            (json!({"content": []}), Value::Null),
            (
                json!({"content": [{"type": "text", "text": "x"}], "structuredContent": {"s": 1}}),
                json!({"s": 1}),
            ),
            (
                json!({"content": [{"type": "text", "text": "x"}, {"type": "text", "text": "[1]"}]}),
                json!(["x", [1]]),
            ),
            (
                json!({"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
                json!({"type": "image", "data": "AA==", "mimeType": "image/png"}),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(tool_result(result(input.clone())), Ok(want), "{input}");
        }
    }

    #[test]
    fn errors() {
        let r = result(json!({
            "isError": true,
            "content": [{"type": "text", "text": "no such file"}, {"type": "text", "text": "sorry"}],
            "structuredContent": {"errno": 2}
        }));
        assert_eq!(
            tool_result(r),
            Err(ToolError::Failed {
                message: "no such file\nsorry".into(),
                data: Some(json!({"errno": 2}))
            })
        );
        let r = result(json!({"isError": true, "content": []}));
        assert!(matches!(
            tool_result(r),
            Err(ToolError::Failed { data: None, .. })
        ));
    }

    #[test]
    fn args() {
        assert_eq!(arguments("s__t", json!({"a": 1})).unwrap().len(), 1);
        for (v, kind) in [
            (json!([1]), "array"),
            (json!(null), "null"),
            (json!("x"), "string"),
        ] {
            let err = arguments("fs__read_file", v).unwrap_err().to_string();
            assert_eq!(
                err,
                format!("arguments to `fs__read_file` must be an object, got {kind}")
            );
        }
    }
}
