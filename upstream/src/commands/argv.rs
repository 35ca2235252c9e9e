//! A command tool's arguments → its argv: each placeholder becomes exactly one element, never
//! split and never seen by a shell.

use codemode_config::{CommandArg, CommandConfig};
use serde_json::Value;

/// The argv after the program, from `args` (already checked against the `inputSchema`).
///
/// A `{param?}` whose argument is absent or `null` is dropped. Strings pass as they are,
/// numbers and booleans as their JSON text (`3`, `true`). Refused, with a message naming the
/// argument: arrays and objects (they would need a way to become several arguments), a value
/// with a NUL character (no argv element can hold one), and a value starting with `-` unless
/// its schema property sets `"x-allowOption": true` (it would be read as an option:
/// `--upload-pack=…`).
pub(super) fn argv(command: &CommandConfig, args: &Value) -> Result<Vec<String>, String> {
    let mut out = Vec::with_capacity(command.args.len());
    for arg in &command.args {
        match arg {
            CommandArg::Literal(s) => out.push(s.clone()),
            CommandArg::Param {
                name,
                optional,
                allow_option,
            } => {
                let value = args.get(name).filter(|v| !v.is_null());
                let Some(value) = value else {
                    if *optional {
                        continue;
                    }
                    return Err(format!("the argument `{name}` is required"));
                };
                let text = match value {
                    Value::String(s) => s.clone(),
                    Value::Number(_) | Value::Bool(_) => value.to_string(),
                    _ => {
                        return Err(format!(
                            "the argument `{name}` must be a string, number or boolean (it \
                             becomes one command-line argument); arrays and objects are refused"
                        ));
                    }
                };
                if text.contains('\0') {
                    return Err(format!(
                        "the argument `{name}` contains a NUL character, which no command-line \
                         argument can hold"
                    ));
                }
                if text.starts_with('-') && !allow_option {
                    return Err(format!(
                        "the argument `{name}` starts with `-`, so `{}` would read it as an \
                         option; refused (the tool's inputSchema can allow it with \
                         \"x-allowOption\": true)",
                        command.command
                    ));
                }
                out.push(text);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use codemode_policies::Config;
    use serde_json::json;

    use super::*;

    fn command(allow_option: bool) -> CommandConfig {
        let json = json!({"commands": {"c": {
            "command": "printf", "args": ["%s\n", "{a}", "{b?}", "--", "{c?}"],
            "inputSchema": {"type": "object", "required": ["a"], "properties": {
                "a": {"type": ["string", "number", "boolean"]},
                "b": {"type": "string"},
                "c": {"type": "string", "x-allowOption": allow_option}}}}}});
        let config = Config::from_json_str(&json.to_string()).unwrap();
        config.commands["c"].clone()
    }

    #[test]
    fn each_value_is_one_element_and_absent_optionals_are_dropped() {
        let c = command(false);
        let hostile = "$(touch X); rm -rf / `id` \"q\" 'q'\nnext";
        assert_eq!(
            argv(&c, &json!({"a": hostile})).unwrap(),
            ["%s\n", hostile, "--"]
        );
        assert_eq!(
            argv(&c, &json!({"a": 3, "b": "x y", "c": null})).unwrap(),
            ["%s\n", "3", "x y", "--"]
        );
        assert_eq!(
            argv(&c, &json!({"a": true, "c": ""})).unwrap(),
            ["%s\n", "true", "--", ""]
        );
    }

    #[test]
    fn options_arrays_objects_and_nul_are_refused() {
        let c = command(false);
        assert_eq!(
            argv(&c, &json!({"a": "--upload-pack=touch X"})).unwrap_err(),
            "the argument `a` starts with `-`, so `printf` would read it as an option; refused \
             (the tool's inputSchema can allow it with \"x-allowOption\": true)"
        );
        assert!(
            argv(&c, &json!({"a": -1}))
                .unwrap_err()
                .contains("starts with `-`")
        );
        assert_eq!(
            argv(&c, &json!({"a": ["x", "y"]})).unwrap_err(),
            "the argument `a` must be a string, number or boolean (it becomes one command-line \
             argument); arrays and objects are refused"
        );
        assert!(
            argv(&c, &json!({"a": {}}))
                .unwrap_err()
                .contains("arrays and objects")
        );
        assert!(
            argv(&c, &json!({"a": "x\u{0}y"}))
                .unwrap_err()
                .contains("NUL")
        );
        assert_eq!(
            argv(&c, &json!({})).unwrap_err(),
            "the argument `a` is required"
        );
        let allowed = command(true);
        assert_eq!(
            argv(&allowed, &json!({"a": "x", "c": "-n"})).unwrap(),
            ["%s\n", "x", "--", "-n"]
        );
        assert!(argv(&allowed, &json!({"a": "-n"})).is_err());
    }
}
