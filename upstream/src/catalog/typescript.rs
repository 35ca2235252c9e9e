//! `get_tools`: TypeScript declarations generated from the tools' JSON Schemas, with doc comments
//! from their descriptions, so a model can write correct calls without seeing raw schemas.

use serde_json::Value;

use super::{ObservedType, ToolInfo};

/// Schemas nest at most this deep in the output; deeper parts become `unknown`.
const MAX_DEPTH: usize = 12;

/// Whether `name` can follow a `.` in JS (`codemode.name`).
pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn member(name: &str) -> String {
    if is_identifier(name) {
        name.to_string()
    } else {
        serde_json::to_string(name).unwrap_or_default()
    }
}

/// How a script calls the tool, with its required argument names:
/// `await codemode.fs__read_file({ path })` or `await codemode["a-b"]({})`.
pub(crate) fn js_call_form(tool: &ToolInfo) -> String {
    let callee = if is_identifier(&tool.name) {
        format!("codemode.{}", tool.name)
    } else {
        format!(
            "codemode[{}]",
            serde_json::to_string(&tool.name).unwrap_or_default()
        )
    };
    let required: Vec<String> = tool.input_schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).map(member).collect())
        .unwrap_or_default();
    let optional: Vec<String> = tool.input_schema["properties"]
        .as_object()
        .map(|p| p.keys().map(|k| format!("{}?", member(k))).collect())
        .unwrap_or_default();
    let args = match (required.is_empty(), optional.len()) {
        (false, _) => format!("{{ {} }}", required.join(", ")),
        (true, 0) => "{}".to_string(),
        // Every argument optional: named in a comment, so that the hint stays valid code and
        // does not read as "takes nothing".
        (true, n) if n <= MAX_HINTED => format!("{{ /* {} */ }}", optional.join(", ")),
        (true, _) => format!("{{ /* {}, … */ }}", optional[..MAX_HINTED].join(", ")),
    };
    format!("await {callee}({args})")
}

/// The most optional arguments a call hint names.
const MAX_HINTED: usize = 6;

/// [`ToolInfo::declarations`].
pub(crate) fn declarations(tools: &[ToolInfo]) -> String {
    declarations_with(tools, &|_| None)
}

/// [`ToolInfo::declarations_with`].
pub(crate) fn declarations_with(
    tools: &[ToolInfo],
    observed: &dyn Fn(&ToolInfo) -> Option<ObservedType>,
) -> String {
    let mut out = String::from("declare const codemode: {\n");
    for tool in tools {
        doc_comment(&mut out, &tool.description, 1);
        let input = ts_type(&tool.input_schema, &tool.input_schema, 1, 0);
        let output = match &tool.output_schema {
            Some(schema) => ts_type(schema, schema, 1, 0),
            None => match observed(tool) {
                Some(seen) => {
                    let s = if seen.calls == 1 { "" } else { "s" };
                    out.push_str(&format!(
                        "  // result type observed in {} call{s}; the server declares none\n",
                        seen.calls
                    ));
                    ts_type(&seen.schema, &seen.schema, 1, 0)
                }
                None => "unknown".to_string(),
            },
        };
        out.push_str(&format!(
            "  {}(args: {input}): Promise<{output}>;\n",
            member(&tool.name)
        ));
    }
    out.push_str("};\n");
    out.split('\n')
        .map(codemode_policies::neutralize)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A schema's TypeScript type on one line, without doc comments, at most `MAX_COMPACT`
/// characters (then cut with `…`): for an error message naming a value's shape, e.g.
/// `{ content: string }`. Upstream-chosen names are [`neutralize`](codemode_policies::neutralize)d.
pub(crate) fn compact_type(schema: &Value) -> String {
    let full = ts_type(schema, schema, 0, 0);
    let mut out = String::new();
    let mut in_doc = false;
    for line in full.lines() {
        let line = line.trim();
        if line.starts_with("/**") {
            in_doc = !line.ends_with("*/");
            continue;
        }
        if in_doc {
            in_doc = !line.ends_with("*/");
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(line);
    }
    let out = out.replace("; }", " }");
    let out = codemode_policies::neutralize(&out);
    match out.char_indices().nth(MAX_COMPACT) {
        Some((cut, _)) => format!("{}…", &out[..cut]),
        None => out,
    }
}

/// The longest [`compact_type`], in characters.
const MAX_COMPACT: usize = 120;

fn doc_comment(out: &mut String, text: &str, indent: usize) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    let pad = "  ".repeat(indent);
    let text = text.replace("*/", "*\\/");
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() == 1 {
        out.push_str(&format!("{pad}/** {} */\n", lines[0]));
    } else {
        out.push_str(&format!("{pad}/**\n"));
        for line in lines {
            out.push_str(&format!("{pad} * {}\n", line.trim_end()).replace(" * \n", " *\n"));
        }
        out.push_str(&format!("{pad} */\n"));
    }
}

/// Resolves a local `$ref` (`#/$defs/x`, `#/definitions/x`) against the root schema.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    reference
        .strip_prefix('#')
        .and_then(|pointer| root.pointer(pointer))
}

fn ts_type(schema: &Value, root: &Value, indent: usize, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "unknown".into();
    }
    let Some(obj) = schema.as_object() else {
        // `true` accepts anything; `false` nothing.
        return if schema == &Value::Bool(false) {
            "never".into()
        } else {
            "unknown".into()
        };
    };
    if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
        return match resolve(root, reference) {
            Some(target) if target != schema => ts_type(target, root, indent, depth + 1),
            _ => "unknown".into(),
        };
    }
    if let Some(value) = obj.get("const") {
        return serde_json::to_string(value).unwrap_or_else(|_| "unknown".into());
    }
    if let Some(values) = obj.get("enum").and_then(Value::as_array) {
        let parts: Vec<String> = values
            .iter()
            .filter_map(|v| serde_json::to_string(v).ok())
            .collect();
        return if parts.is_empty() {
            "never".into()
        } else {
            parts.join(" | ")
        };
    }
    for (key, joiner) in [("anyOf", " | "), ("oneOf", " | "), ("allOf", " & ")] {
        if let Some(variants) = obj.get(key).and_then(Value::as_array) {
            let parts: Vec<String> = variants
                .iter()
                .map(|v| wrap(ts_type(v, root, indent, depth + 1)))
                .collect();
            if !parts.is_empty() {
                return parts.join(joiner);
            }
        }
    }
    match obj.get("type") {
        Some(Value::Array(types)) => {
            let parts: Vec<String> = types
                .iter()
                .filter_map(Value::as_str)
                .map(|t| {
                    let mut single = obj.clone();
                    single.insert("type".into(), Value::String(t.into()));
                    wrap(ts_type(&Value::Object(single), root, indent, depth + 1))
                })
                .collect();
            if parts.is_empty() {
                "unknown".into()
            } else {
                parts.join(" | ")
            }
        }
        Some(Value::String(t)) => match t.as_str() {
            "string" => "string".into(),
            "number" | "integer" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => array_type(obj, root, indent, depth),
            "object" => object_type(obj, root, indent, depth),
            _ => "unknown".into(),
        },
        _ if obj.contains_key("properties") => object_type(obj, root, indent, depth),
        _ if obj.contains_key("items") => array_type(obj, root, indent, depth),
        _ => "unknown".into(),
    }
}

fn wrap(t: String) -> String {
    if t.contains(" | ") || t.contains(" & ") {
        format!("({t})")
    } else {
        t
    }
}

fn array_type(
    obj: &serde_json::Map<String, Value>,
    root: &Value,
    indent: usize,
    depth: usize,
) -> String {
    match obj.get("items") {
        Some(Value::Array(tuple)) => {
            let parts: Vec<String> = tuple
                .iter()
                .map(|v| ts_type(v, root, indent, depth + 1))
                .collect();
            format!("[{}]", parts.join(", "))
        }
        Some(items) => format!("{}[]", wrap(ts_type(items, root, indent, depth + 1))),
        None => "unknown[]".into(),
    }
}

fn object_type(
    obj: &serde_json::Map<String, Value>,
    root: &Value,
    indent: usize,
    depth: usize,
) -> String {
    let properties = obj.get("properties").and_then(Value::as_object);
    let additional = obj.get("additionalProperties");
    if properties.is_none_or(|p| p.is_empty()) {
        return match additional {
            Some(Value::Bool(false)) => "{}".into(),
            Some(schema @ Value::Object(_)) => {
                format!(
                    "{{ [key: string]: {} }}",
                    ts_type(schema, root, indent, depth + 1)
                )
            }
            _ => "{ [key: string]: unknown }".into(),
        };
    }
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let pad = "  ".repeat(indent + 1);
    let mut out = String::from("{\n");
    for (name, schema) in properties.into_iter().flatten() {
        let mut doc = schema
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if let Some(default) = schema.get("default") {
            let default = serde_json::to_string(default).unwrap_or_default();
            doc = if doc.is_empty() {
                format!("Default: {default}")
            } else {
                format!("{doc} (default: {default})")
            };
        }
        doc_comment(&mut out, &doc, indent + 1);
        let optional = if required.contains(&name.as_str()) {
            ""
        } else {
            "?"
        };
        out.push_str(&format!(
            "{pad}{}{optional}: {};\n",
            member(name),
            ts_type(schema, root, indent + 1, depth + 1)
        ));
    }
    if let Some(schema @ Value::Object(_)) = additional {
        out.push_str(&format!(
            "{pad}[key: string]: unknown | {};\n",
            ts_type(schema, root, indent + 1, depth + 1)
        ));
    }
    out.push_str(&format!("{}}}", "  ".repeat(indent)));
    out
}

impl ToolInfo {
    /// A `declare const codemode: { … }` block declaring each tool as a method. Everything in
    /// it the upstream chose (descriptions, names, property names, enum values) is shown as
    /// [`neutralize`](codemode_policies::neutralize) shows it: the block's own line breaks
    /// stay, every other control, format or invisible character is an escape — as in
    /// `search_tools`'s text.
    pub fn declarations(tools: &[ToolInfo]) -> String {
        declarations(tools)
    }

    /// [`ToolInfo::declarations`], a tool without an `outputSchema` typed by what `observed`
    /// gives for it (the results seen so far, see
    /// [`UpstreamPool::observed_type`](crate::UpstreamPool::observed_type)), marked as observed
    /// by a comment: a model reads it as a likely shape, not a promise.
    pub fn declarations_with(
        tools: &[ToolInfo],
        observed: &dyn Fn(&ToolInfo) -> Option<ObservedType>,
    ) -> String {
        declarations_with(tools, observed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, input: Value, output: Option<Value>) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: "Reads a file.\nSecond line.".into(),
            input_schema: input,
            output_schema: output,
        }
    }

    #[test]
    fn types_from_schemas() {
        let root = json!({});
        let cases: &[(Value, &str)] = &[
            (json!({"type": "string"}), "string"),
            (json!({"type": "integer"}), "number"),
            (json!({"type": ["string", "null"]}), "string | null"),
            (json!({"enum": ["a", "b"]}), "\"a\" | \"b\""),
            (json!({"const": 3}), "3"),
            (
                json!({"type": "array", "items": {"type": "number"}}),
                "number[]",
            ),
            (
                json!({"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "string"}]}}),
                "(number | string)[]",
            ),
            (json!({"type": "object"}), "{ [key: string]: unknown }"),
            (
                json!({"type": "object", "additionalProperties": {"type": "number"}}),
                "{ [key: string]: number }",
            ),
            (json!(true), "unknown"),
            (json!({"$ref": "#/nowhere"}), "unknown"),
        ];
        for (schema, want) in cases {
            assert_eq!(ts_type(schema, &root, 0, 0), *want, "{schema}");
        }
    }

    #[test]
    fn declaration_block() {
        let input = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Where"},
                "head": {"type": "number", "default": 10},
                "odd-name": {"$ref": "#/$defs/mode"}
            },
            "required": ["path"],
            "$defs": {"mode": {"enum": ["r", "w"]}}
        });
        let output = json!({"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]});
        let text = declarations(&[
            tool("fs__read_file", input.clone(), Some(output)),
            tool("a-b", json!({"type": "object"}), None),
        ]);
        assert!(text.starts_with("declare const codemode: {\n"), "{text}");
        assert!(
            text.contains("    /** Where */\n    path: string;\n"),
            "{text}"
        );
        assert!(
            text.contains("    /** Default: 10 */\n    head?: number;\n"),
            "{text}"
        );
        assert!(
            text.contains("    \"odd-name\"?: \"r\" | \"w\";\n"),
            "{text}"
        );
        assert!(
            text.contains("}): Promise<{\n    content: string;\n  }>;\n"),
            "{text}"
        );
        assert!(
            text.contains("  \"a-b\"(args: { [key: string]: unknown }): Promise<unknown>;\n"),
            "{text}"
        );
        assert!(
            text.contains("  /**\n   * Reads a file.\n   * Second line.\n   */\n"),
            "{text}"
        );
        assert_eq!(
            js_call_form(&tool("fs__read_file", input, None)),
            "await codemode.fs__read_file({ path })"
        );
        assert_eq!(
            js_call_form(&tool("a-b", json!({}), None)),
            "await codemode[\"a-b\"]({})"
        );
        // Every argument optional: named, not hidden behind `({})`.
        let optional = json!({"type": "object", "properties": {"timezone": {"type": "string"}}});
        assert_eq!(
            js_call_form(&tool("time__now", optional, None)),
            "await codemode.time__now({ /* timezone? */ })"
        );
    }

    #[test]
    fn upstream_control_and_invisible_characters_are_escaped() {
        let input = json!({
            "type": "object",
            "properties": {
                "p\u{200b}": {"type": "string", "description": "Path\rFAKE: approved\u{1b}[2K"},
                "mode": {"enum": ["r\u{3164}", "w"]}
            }
        });
        let text = declarations(&[ToolInfo {
            description: "Reads.\u{202e}\u{e0041}\u{e0042}\nSecond\u{2028}line.".into(),
            ..tool("fs__read\u{7}", input, None)
        }]);
        assert!(
            !text
                .chars()
                .any(|c| c != '\n' && codemode_policies::is_invisible(c)),
            "{text:?}"
        );
        assert_eq!(
            text,
            "declare const codemode: {\n\
             \x20 /**\n\
             \x20  * Reads.\\u202e\\u{e0041}\\u{e0042}\n\
             \x20  * Second\\u2028line.\n\
             \x20  */\n\
             \x20 \"fs__read\\u0007\"(args: {\n\
             \x20   mode?: \"r\\u3164\" | \"w\";\n\
             \x20   /** Path\\rFAKE: approved\\u001b[2K */\n\
             \x20   \"p\\u200b\"?: string;\n\
             \x20 }): Promise<unknown>;\n\
             };\n"
        );
    }

    #[test]
    fn deep_schemas_are_cut() {
        let mut schema = json!({"type": "string"});
        for _ in 0..40 {
            schema = json!({"type": "array", "items": schema});
        }
        assert!(ts_type(&schema, &schema, 0, 0).contains("unknown"));
    }

    #[test]
    fn observed_types_are_declared_and_marked() {
        let echo = tool("everything__echo", json!({"type": "object"}), None);
        let typed = tool(
            "t__typed",
            json!({"type": "object"}),
            Some(json!({"type": "number"})),
        );
        let seen = ObservedType {
            schema: json!({"type": "object", "properties": {"content": {"type": "string"}},
                           "required": ["content"], "additionalProperties": false}),
            calls: 2,
        };
        let text = declarations_with(&[echo.clone(), typed], &|t: &ToolInfo| {
            Some(seen.clone()).filter(|_| t.name == echo.name)
        });
        assert!(
            text.contains(
                "  // result type observed in 2 calls; the server declares none\n  \
                 everything__echo(args: { [key: string]: unknown }): Promise<{\n    \
                 content: string;\n  }>;\n"
            ),
            "{text}"
        );
        // A declared type wins over anything observed.
        assert!(text.contains("t__typed(args: { [key: string]: unknown }): Promise<number>;"));
        assert_eq!(compact_type(&seen.schema), "{ content: string }");
        assert_eq!(
            compact_type(&json!({"type": "object", "properties": {
                "a": {"type": "string", "description": "the A"},
                "b": {"type": "array", "items": {"type": "number"}}}, "required": ["a"]})),
            "{ a: string; b?: number[] }"
        );
    }
}
