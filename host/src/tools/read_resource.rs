//! `codemode.read_resource({server, uri})`: a script reads an upstream's resource.
//!
//! Decided like any call by the eval's profile (the tool name `read_resource`, so an
//! `asklist` entry makes a human approve each read) and, in addition, by the profile's
//! `resources` globs over `<server>__<uri>`; audited as a `tool_call`, with the `outputs` rules
//! of `read_resource` applied to its result. The result is the upstream's
//! `{contents: [{uri, mimeType, text | blob}]}` with the URIs as the upstream wrote them.

use codemode_policies::Profile;
use codemode_runtime::ToolError;

use codemode_upstream::resources::{MappedUri, UpstreamRequestError};
use codemode_upstream::{CallScope, UpstreamPool};
use serde_json::{Value, json};

/// The built-in's name.
pub(crate) const TOOL_NAME: &str = "read_resource";

/// What the model reads about it.
pub(crate) const DESCRIPTION: &str = "Read a resource of an upstream server: `{server, uri}` (the server's own URI); returns `{contents: [{uri, mimeType, text | blob}]}`.";

/// JSON Schema of its arguments.
pub fn input_schema() -> Value {
    json!({"type": "object", "properties": {
        "server": {"type": "string", "description": "The upstream server's name, as in `<server>__<tool>`"},
        "uri": {"type": "string", "description": "The resource's URI on that server"}},
        "required": ["server", "uri"], "additionalProperties": false})
}

fn text_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    match args.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(ToolError::failed(format!(
            "`{TOOL_NAME}` needs `{key}`, a non-empty string: {{server: \"everything\", uri: \"demo://resource/static/document/architecture.md\"}}"
        ))),
    }
}

/// Reads the resource for a script.
pub(super) async fn run(
    upstreams: &UpstreamPool,
    (profile, scope): (Option<&Profile>, &CallScope),
    args: Value,
) -> Result<Value, ToolError> {
    let server = text_arg(&args, "server")?;
    let mut uri = text_arg(&args, "uri")?;
    // A mapped URI (as codemode's own resources/list shows them) names its server itself.
    if uri.starts_with(MappedUri::PREFIX) {
        match MappedUri::parse(uri) {
            Some(mapped) if mapped.server == server => uri = mapped.original,
            _ => {
                return Err(ToolError::failed(format!(
                    "`{}` is not a resource of server `{}`: pass the server's own URI",
                    codemode_policies::neutralize(uri),
                    codemode_policies::neutralize(server)
                )));
            }
        }
    }
    let name = MappedUri {
        server,
        original: uri,
    }
    .policy_name();
    if profile.is_some_and(|p| !p.lets_resource(&name)) {
        return Err(ToolError::Denied {
            tool: TOOL_NAME.into(),
            reason: "denied".into(),
            message: format!(
                "the profile's `resources` do not let `{}` through",
                codemode_policies::neutralize(&name)
            ),
        });
    }
    let result = upstreams
        .read_resource(server, uri, Some(scope))
        .await
        .map_err(|e| match e {
            UpstreamRequestError::NotFound(m) | UpstreamRequestError::Failed(m) => {
                ToolError::failed(m)
            }
        })?;
    // Only the contents, with the server's own URIs (not the protocol's result type or cache
    // hints).
    let contents = serde_json::to_value(result.contents).unwrap_or(Value::Null);
    Ok(json!({ "contents": contents }))
}
