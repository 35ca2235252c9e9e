//! MCP ↔ JS values: a script's arguments become `tools/call` arguments, a `CallToolResult`
//! becomes the value (or the error) the script's promise settles with.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::Value;

use codemode_runtime::ToolError;

use crate::media::Media;

/// The key of the media values added to an upstream's `structuredContent` object when it sent
/// non-text blocks beside it (see [`tool_result`]).
pub const MEDIA_KEY: &str = codemode_policies::MEDIA_KEY;

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
/// * `structuredContent` when present — when the upstream also sent non-text blocks and the
///   structured content is an object without a [`MEDIA_KEY`] member, their values are added
///   under [`MEDIA_KEY`] as an array (other blocks beside structured content are dropped);
/// * otherwise one content block → that block's value, several → an array of them, none →
///   `null`. A text block's value is its text parsed as JSON when it is valid JSON, else the
///   text; any other block's value is the small value [`Media::keep`] gives for it
///   (`{"type":"image","mimeType":…,"size":…,"id":…}`), its bytes kept in `media`.
pub(crate) fn tool_result(
    result: CallToolResult,
    server: &str,
    media: &Media,
) -> Result<Value, ToolError> {
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
    if let Some(mut structured) = result.structured_content {
        if let Value::Object(fields) = &mut structured
            && !fields.contains_key(MEDIA_KEY)
        {
            let kept: Vec<Value> = result
                .content
                .into_iter()
                .filter(|b| b.as_text().is_none())
                .map(|b| media.keep(server, b))
                .collect();
            if !kept.is_empty() {
                fields.insert(MEDIA_KEY.into(), Value::Array(kept));
            }
        }
        return Ok(structured);
    }
    let mut values: Vec<Value> = result
        .content
        .into_iter()
        .map(|b| block(b, server, media))
        .collect();
    Ok(match values.len() {
        0 => Value::Null,
        1 => values.pop().unwrap_or(Value::Null),
        _ => Value::Array(values),
    })
}

fn block(b: ContentBlock, server: &str, media: &Media) -> Value {
    match b {
        ContentBlock::Text(t) => match serde_json::from_str::<Value>(&t.text) {
            Ok(v) => v,
            Err(_) => Value::String(t.text),
        },
        other => media.keep(server, other),
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
        ];
        for (input, want) in cases {
            let got = tool_result(result(input.clone()), "s", &Media::default());
            assert_eq!(got, Ok(want), "{input}");
        }
    }

    /// The value with each media `id` replaced by `"<id>"`, after checking its form.
    fn ids_out(mut v: Value) -> Value {
        match &mut v {
            Value::Object(map) => {
                if let Some(Value::String(id)) = map.get_mut("id") {
                    assert!(crate::media::is_media_id(id), "{id}");
                    *id = "<id>".into();
                }
                map.values_mut().for_each(|v| *v = ids_out(v.take()));
            }
            Value::Array(items) => items.iter_mut().for_each(|v| *v = ids_out(v.take())),
            _ => {}
        }
        v
    }

    /// Non-text blocks become media values, their bytes kept in the eval's store; beside
    /// structured content, under `_media`.
    #[test]
    fn media_blocks_become_small_values() {
        let image = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
        let cases = [
            (
                json!({"content": [image]}),
                json!({"type": "image", "mimeType": "image/png", "size": 8, "id": "<id>"}),
            ),
            (
                json!({"content": [{"type": "text", "text": "a cat"}, image]}),
                json!(["a cat", {"type": "image", "mimeType": "image/png", "size": 8, "id": "<id>"}]),
            ),
            (
                json!({"content": [{"type": "text", "text": "{}"}, image], "structuredContent": {"w": 1}}),
                json!({"w": 1, "_media": [{"type": "image", "mimeType": "image/png", "size": 8, "id": "<id>"}]}),
            ),
            // A member of that name is the upstream's: left alone, the block is not kept.
            (
                json!({"content": [image], "structuredContent": {"_media": 0}}),
                json!({"_media": 0}),
            ),
            (
                json!({"content": [{"type": "text", "text": "x"}], "structuredContent": {"w": 1}}),
                json!({"w": 1}),
            ),
        ];
        for (input, want) in cases {
            let media = Media::default();
            let got = tool_result(result(input.clone()), "s", &media).map(ids_out);
            assert_eq!(got, Ok(want), "{input}");
        }
        let media = Media::default();
        let got = tool_result(result(json!({"content": [image]})), "s", &media).unwrap();
        // The block as received (its JSON), not only its 3 decoded bytes.
        let cost = serde_json::to_vec(&image).map_or(0, |v| v.len() as u64);
        assert_eq!(media.used(), cost);
        let (attached, unknown) = media.referenced(&json!({"shot": got}));
        assert_eq!(attached.len(), 1);
        assert_eq!(serde_json::to_value(&attached[0].block).unwrap(), image);
        assert!(unknown.is_empty());
    }

    #[test]
    fn errors() {
        let r = result(json!({
            "isError": true,
            "content": [{"type": "text", "text": "no such file"}, {"type": "text", "text": "sorry"}],
            "structuredContent": {"errno": 2}
        }));
        assert_eq!(
            tool_result(r, "s", &Media::default()),
            Err(ToolError::Failed {
                message: "no such file\nsorry".into(),
                data: Some(json!({"errno": 2}))
            })
        );
        let r = result(json!({"isError": true, "content": []}));
        assert!(matches!(
            tool_result(r, "s", &Media::default()),
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
