//! What `codemode.<name>(…)` reaches inside a governed eval (`codemode run --config` and the MCP
//! server alike): the built-in tools (`search_tools`, `get_tools`, [`hitl_request`](hitl)) and
//! every upstream tool as `server__tool`.

pub mod hitl;
mod in_flight;

pub use in_flight::{InFlightCalls, InFlightGuard, in_flight};

use std::sync::Arc;

use codemode_runtime::{BoxFuture, CallContext, ToolError, ToolHost};
use serde_json::{Value, json};

use crate::approvals::Asker;
use crate::catalog::{self, ToolInfo};
use crate::upstream::UpstreamPool;

/// `search_tools`'s name.
pub const SEARCH_TOOLS: &str = "search_tools";
/// `get_tools`'s name.
pub const GET_TOOLS: &str = "get_tools";
/// Results `search_tools` returns by default, and at most.
const DEFAULT_LIMIT: usize = 10;
const MAX_LIMIT: usize = 50;

/// The built-in tools' catalog entries.
pub fn builtin_infos() -> Vec<ToolInfo> {
    vec![
        ToolInfo {
            name: SEARCH_TOOLS.into(),
            description: "Search the tools scripts can call, by keywords; returns names, one-line descriptions and the JS call form.".into(),
            input_schema: search_schema(),
            output_schema: None,
        },
        ToolInfo {
            name: GET_TOOLS.into(),
            description: "TypeScript declarations (arguments and results, with doc comments) of the named tools.".into(),
            input_schema: get_schema(),
            output_schema: None,
        },
        ToolInfo {
            name: hitl::TOOL_NAME.into(),
            description: hitl::DESCRIPTION.into(),
            input_schema: hitl::input_schema(),
            output_schema: None,
        },
        ToolInfo {
            name: hitl::ALIAS.into(),
            description: format!("The same as `{}`. {}", hitl::TOOL_NAME, hitl::DESCRIPTION),
            input_schema: hitl::input_schema(),
            output_schema: None,
        },
    ]
}

/// JSON Schema of `search_tools`'s arguments.
pub fn search_schema() -> Value {
    json!({"type": "object", "properties": {
        "query": {"type": "string", "description": "Keywords, e.g. \"read file\""},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most results (default 10)"}},
        "required": ["query"], "additionalProperties": false})
}

/// JSON Schema of `get_tools`'s arguments.
pub fn get_schema() -> Value {
    json!({"type": "object", "properties": {
        "names": {"type": "array", "items": {"type": "string"}, "description": "Tool names as scripts call them"}},
        "required": ["names"], "additionalProperties": false})
}

/// Every tool a script can call now: built-ins, then upstream tools.
pub fn catalog(upstreams: &UpstreamPool) -> Vec<ToolInfo> {
    let mut tools = builtin_infos();
    for (name, tool) in upstreams.tools() {
        tools.push(ToolInfo {
            name,
            description: tool.description.as_deref().unwrap_or("").to_string(),
            input_schema: Value::Object((*tool.input_schema).clone()),
            output_schema: tool
                .output_schema
                .as_ref()
                .map(|s| Value::Object((**s).clone())),
        });
    }
    tools
}

/// `search_tools`: `{query, limit?}` → `{results: [{name, description, call, score}]}`.
pub fn search_tools(tools: &[ToolInfo], args: &Value) -> Result<Value, ToolError> {
    let query = args
        .get("query")
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::failed("`query` (a string) is required"))?;
    let limit = match args.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(v) => v
            .as_u64()
            .filter(|&n| n >= 1)
            .map(|n| (n as usize).min(MAX_LIMIT))
            .ok_or_else(|| ToolError::failed("`limit` must be a positive integer"))?,
    };
    let hits = catalog::search(tools, query, limit);
    Ok(json!({ "results": hits }))
}

/// `get_tools`: `{names}` → `{declarations, missing}`; unknown names come with suggestions.
pub fn get_tools(tools: &[ToolInfo], args: &Value) -> Result<Value, ToolError> {
    let names: Vec<&str> = args
        .get("names")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .ok_or_else(|| ToolError::failed("`names` (an array of strings) is required"))?;
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for name in names {
        match tools.iter().find(|t| t.name == name) {
            Some(t) => found.push(t.clone()),
            None => {
                let near = catalog::search(tools, name, 3)
                    .into_iter()
                    .map(|h| h.name)
                    .collect::<Vec<_>>();
                missing.push(json!({"name": name, "did_you_mean": near}));
            }
        }
    }
    Ok(json!({ "declarations": catalog::declarations(&found), "missing": missing }))
}

/// The tool host of one eval.
pub struct ScriptTools {
    upstreams: UpstreamPool,
    asker: Arc<dyn Asker>,
}

impl ScriptTools {
    /// Upstream tools plus built-ins; `hitl_request` asks through `asker`.
    pub fn new(upstreams: UpstreamPool, asker: Arc<dyn Asker>) -> Self {
        ScriptTools { upstreams, asker }
    }
}

impl ToolHost for ScriptTools {
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        match name {
            SEARCH_TOOLS => Box::pin(async move { search_tools(&catalog(&self.upstreams), &args) }),
            GET_TOOLS => Box::pin(async move { get_tools(&catalog(&self.upstreams), &args) }),
            hitl::TOOL_NAME | hitl::ALIAS => Box::pin(async move {
                // A human is deciding: that time does not count against the eval's timeout.
                let _pause = cx.pause_timeout();
                let request_id = format!("hitl-{}-{}", cx.eval_id, cx.call_id);
                Ok(hitl::run(&args, self.asker.as_ref(), &request_id).await)
            }),
            _ => match name.split_once("__") {
                // An upstream's own elicitation during this call may reach this eval's human
                // (see `in_flight`).
                Some((server, _)) => Box::pin(async move {
                    let _in_flight = in_flight().enter(server, &self.asker);
                    self.upstreams.call(name, args, cx).await
                }),
                None => self.upstreams.call(name, args, cx),
            },
        }
    }

    fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = builtin_infos().into_iter().map(|t| t.name).collect();
        names.extend(self.upstreams.tool_names());
        names
    }
}
