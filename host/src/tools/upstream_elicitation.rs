//! An upstream server's own `elicitation/create` goes to the human of the eval whose call
//! triggered it ([`ForwardElicitation`]), and an `accept` that leaves fields out is completed
//! from the form's defaults before it goes back (SEP-1034).

use std::sync::Arc;
use std::time::Duration;

use codemode_runtime::BoxFuture;
use codemode_upstream::{ElicitationFailed, UpstreamElicitation};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

use crate::approvals::{Answer, Ask, Asker, Question};

/// How long the human has to answer an upstream's form.
const ANSWER_WITHIN: Duration = Duration::from_secs(120);

/// Puts an upstream's `elicitation/create` during one eval's call to that eval's human, through
/// the eval's asker; the upstream pool routes each request to the eval whose call it came
/// during (see [`codemode_upstream::UpstreamElicitation`]).
///
/// Declined when the eval cannot ask anyone (a `codemode run` without a terminal, a client
/// without elicitation); every decline is logged (warn).
pub struct ForwardElicitation {
    asker: Arc<dyn Asker>,
}

impl ForwardElicitation {
    /// Asks through `asker`, the eval's.
    pub fn new(asker: Arc<dyn Asker>) -> Self {
        ForwardElicitation { asker }
    }
}

impl UpstreamElicitation for ForwardElicitation {
    fn elicit<'a>(
        &'a self,
        server: &'a str,
        params: ElicitRequestParams,
    ) -> BoxFuture<'a, Result<ElicitResult, ElicitationFailed>> {
        Box::pin(async move {
            let asker = &self.asker;
            if !asker.supports() {
                tracing::warn!(
                    "declined an elicitation from upstream `{server}`: the script whose call it came during has nobody to ask (no terminal, or a client without elicitation)"
                );
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
            let (message, schema) = match params {
                ElicitRequestParams::FormElicitationParams {
                    message,
                    requested_schema,
                    ..
                } => {
                    let schema = serde_json::to_value(&requested_schema)
                        .map_err(|e| ElicitationFailed::new(e.to_string()))?;
                    (message, schema.as_object().cloned().unwrap_or_default())
                }
                _ => {
                    tracing::warn!(
                        "declined a URL elicitation from upstream `{server}`: codemode forwards form elicitations only"
                    );
                    return Ok(ElicitResult::new(ElicitationAction::Decline));
                }
            };
            // The server's own lines are indented under codemode's header, so that none of them
            // can pass for a header of another server's question.
            let indented: Vec<String> = message.split('\n').map(|l| format!("    {l}")).collect();
            let question = Question {
                message: format!("[upstream server `{server}` asks]\n{}", indented.join("\n")),
                schema,
            };
            let answer = asker
                .ask(Ask::form(question.clone(), ANSWER_WITHIN))
                .await
                .answer;
            Ok(match answer {
                Answer::Accept(content) => ElicitResult::new(ElicitationAction::Accept)
                    .with_content(with_defaults(&question.schema, content)),
                Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
                _ => ElicitResult::new(ElicitationAction::Cancel),
            })
        })
    }
}

/// `content` with every property of `schema` it leaves out that has a `default` set to that
/// default (SEP-1034: a client completes an accepted form from the schema's defaults).
pub(crate) fn with_defaults(schema: &Map<String, Value>, content: Value) -> Value {
    let mut content = match content {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => return other,
    };
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Value::Object(content);
    };
    for (name, property) in properties {
        if let Some(default) = property.get("default")
            && !content.contains_key(name)
        {
            content.insert(name.clone(), default.clone());
        }
    }
    Value::Object(content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_accepted_form_is_completed_from_its_defaults() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string"},
            "tone": {"type": "string", "enum": ["warm", "cold"], "default": "warm"},
            "count": {"type": "integer", "default": 3},
            "tags": {"type": "array", "items": {"type": "string"}, "default": ["a"]},
        }});
        let schema = schema.as_object().cloned().unwrap_or_default();
        let cases = [
            (
                json!({}),
                json!({"tone": "warm", "count": 3, "tags": ["a"]}),
            ),
            (
                Value::Null,
                json!({"tone": "warm", "count": 3, "tags": ["a"]}),
            ),
            (
                json!({"name": "Ada", "count": 7}),
                json!({"name": "Ada", "tone": "warm", "count": 7, "tags": ["a"]}),
            ),
            // A value given, even null or falsy, is the human's: kept.
            (
                json!({"tone": "cold", "count": 0, "tags": []}),
                json!({"tone": "cold", "count": 0, "tags": []}),
            ),
        ];
        for (given, want) in cases {
            assert_eq!(with_defaults(&schema, given.clone()), want, "{given}");
        }
        let no_properties = Map::new();
        assert_eq!(
            with_defaults(&no_properties, json!({"x": 1})),
            json!({"x": 1})
        );
    }
}
