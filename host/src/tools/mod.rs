//! What `codemode.<name>(…)` reaches inside a governed eval (`codemode run --config` and the MCP
//! server alike): the built-in tools (`search_tools`, `get_tools`, [`hitl_request`](hitl)),
//! the config's local command tools ([`CommandTools`](codemode_upstream::CommandTools)) and every upstream tool as `server__tool`,
//! both from [`codemode_upstream`].

pub mod hitl;
mod observed;
mod read_resource;
mod sampling;
mod sampling_prompt;
mod schemas;
mod upstream_elicitation;

pub use observed::ObservedTypes;
pub use sampling::{ClientModel, SamplingGate, SamplingRoute};
pub use schemas::CatalogSchemas;
pub use upstream_elicitation::ForwardElicitation;

use std::sync::Arc;

use codemode_runtime::{BoxFuture, CallContext, ToolError, ToolHost};
use serde_json::{Value, json};

use codemode_policies::{DispositionKind, MatchedBy, Profile, quoted};

use crate::approvals::Asker;
use codemode_upstream::catalog::ToolInfo;
use codemode_upstream::{CallRelay, CallSampler, CallScope, Media, UpstreamPool};

/// `search_tools`'s name.
pub(crate) const SEARCH_TOOLS: &str = "search_tools";
/// `get_tools`'s name.
pub(crate) const GET_TOOLS: &str = "get_tools";
/// Results `search_tools` returns by default, and at most.
const DEFAULT_LIMIT: usize = 10;
const MAX_LIMIT: usize = 50;
/// Longest `search_tools` query, in bytes: a few keywords, not a document (ranking cost grows
/// with the query's words).
pub(crate) const MAX_QUERY_BYTES: usize = 1000;
/// Most names one `get_tools` call may ask about.
pub(crate) const MAX_GET_NAMES: usize = 100;
/// Longest name `get_tools` looks up, in bytes (an unknown name is searched for suggestions).
pub(crate) const MAX_NAME_BYTES: usize = 256;

/// The built-in tools' catalog entries.
pub(crate) fn builtin_infos() -> Vec<ToolInfo> {
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
        ToolInfo {
            name: read_resource::TOOL_NAME.into(),
            description: read_resource::DESCRIPTION.into(),
            input_schema: read_resource::input_schema(),
            output_schema: None,
        },
    ]
}

/// JSON Schema of `search_tools`'s arguments.
pub(crate) fn search_schema() -> Value {
    json!({"type": "object", "properties": {
        "query": {"type": "string", "description": "Keywords, e.g. \"read file\""},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most results (default 10)"},
        "profile": {"type": "string", "description": "MCP only: list for this profile (default: `eval`'s); scripts see their own"}},
        "required": ["query"], "additionalProperties": false})
}

/// JSON Schema of `get_tools`'s arguments.
pub(crate) fn get_schema() -> Value {
    json!({"type": "object", "properties": {
        "names": {"type": "array", "items": {"type": "string"}, "description": "Tool names as scripts call them"},
        "profile": {"type": "string", "description": "MCP only: declare for this profile (default: `eval`'s); scripts see their own"}},
        "required": ["names"], "additionalProperties": false})
}

/// Every tool a script can call now: built-ins, command tools, then upstream tools.
pub fn catalog(upstreams: &UpstreamPool) -> Vec<ToolInfo> {
    let mut tools = builtin_infos();
    tools.extend(upstreams.commands().infos());
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

/// What `profile` lets its callers discover: `tools` without the ones it denies (their
/// descriptions and schemas are not shown), and the names of those it asks about. A tool denied
/// only by a rule with `when` or `whenPath` conditions depends on the arguments and stays visible. Without a
/// profile, everything is visible and nothing is asked.
pub(crate) fn visible_to(
    tools: Vec<ToolInfo>,
    profile: Option<&Profile>,
) -> (Vec<ToolInfo>, Vec<String>) {
    let Some(profile) = profile else {
        return (tools, Vec::new());
    };
    let mut visible = Vec::with_capacity(tools.len());
    let mut asked = Vec::new();
    for tool in tools {
        match seen_as(profile, &tool.name) {
            None => continue,
            Some(DispositionKind::Ask) => asked.push(tool.name.clone()),
            Some(_) => {}
        }
        visible.push(tool);
    }
    (visible, asked)
}

/// How `profile` shows the tool `name` to discovery: `None` when it denies it (whatever the
/// arguments), else the disposition.
fn seen_as(profile: &Profile, name: &str) -> Option<DispositionKind> {
    let d = profile.disposition(name, &json!({}));
    let args_dependent = matches!(d.matched, MatchedBy::Rule(i)
        if profile.rules().get(i).is_some_and(|r| r.depends_on_args()));
    (args_dependent || d.kind != DispositionKind::Deny).then_some(d.kind)
}

/// Whether a caller under `profile` may learn of the tool `name` (see [`visible_to`]).
fn may_see(profile: Option<&Profile>, name: &str) -> bool {
    profile.is_none_or(|p| seen_as(p, name).is_some())
}

/// The upstream servers a caller under any of `profiles` may learn of (see [`may_see_server`]),
/// by name.
pub(crate) fn servers_seen(
    upstreams: &UpstreamPool,
    profiles: &[Option<&Profile>],
) -> std::collections::BTreeSet<String> {
    let known = upstreams.tool_names();
    upstreams
        .status()
        .into_iter()
        .map(|s| s.name)
        .filter(|server| profiles.iter().any(|p| may_see_server(*p, server, &known)))
        .collect()
}

/// Whether a caller under `profile` may learn that upstream `server` exists, and its state:
/// some tool of it among `known` (every server's tools as last listed) is one the profile lets
/// it see; for a server with no tool known yet, when one could be (`<server>__*` passes).
fn may_see_server(profile: Option<&Profile>, server: &str, known: &[String]) -> bool {
    let prefix = format!("{server}__");
    let mut tools = known.iter().filter(|n| n.starts_with(&prefix)).peekable();
    if tools.peek().is_none() {
        return may_see(profile, &format!("{prefix}*"));
    }
    tools.any(|n| may_see(profile, n))
}

/// Marks the results of [`search_tools`] / [`get_tools`] the profile asks about:
/// `needsApproval: true` on each search hit, `needsApproval: [names]` on a `get_tools` result.
pub(crate) fn mark_asked(mut result: Value, asked: &[String]) -> Value {
    if let Some(hits) = result.get_mut("results").and_then(Value::as_array_mut) {
        for hit in hits {
            let name = hit["name"].as_str().unwrap_or_default().to_string();
            if asked.contains(&name) {
                hit["needsApproval"] = json!(true);
            }
        }
    } else if result.get("declarations").is_some() {
        let declared = result["declarations"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let needs: Vec<&String> = asked
            .iter()
            .filter(|n| declared.contains(n.as_str()))
            .collect();
        result["needsApproval"] = json!(needs);
    }
    result
}

/// Adds `unavailable: [{server, state, error?}]` to a [`search_tools`] or [`get_tools`] result
/// when some upstream server the profile may learn of ([`may_see_server`]) is not up (`state`:
/// `starting`, or `down` or `needs login` with the neutralised `error`), so that a search
/// finding nothing of a server says why; and to each name
/// `get_tools` did not find whose server is one of them, that server's entry (`server_state`), so
/// that a tool asked for while its server starts is not called unknown. Other results are
/// returned as they are.
pub(crate) fn mark_unavailable(
    mut result: Value,
    upstreams: &UpstreamPool,
    profile: Option<&Profile>,
) -> Value {
    if result.get("results").is_none() && result.get("missing").is_none() {
        return result;
    }
    let seen = servers_seen(upstreams, &[profile]);
    let unavailable: Vec<Value> = upstreams
        .status()
        .iter()
        .filter(|s| !s.connected && seen.contains(&s.name))
        .map(|s| {
            if s.starting {
                json!({"server": s.name, "state": "starting"})
            } else if s.needs_login {
                json!({"server": s.name, "state": "needs login", "error": s.down_reason()})
            } else {
                json!({"server": s.name, "state": "down", "error": s.down_reason()})
            }
        })
        .collect();
    if unavailable.is_empty() {
        return result;
    }
    if let Some(missing) = result.get_mut("missing").and_then(Value::as_array_mut) {
        // Only for a name the profile may see: a server behind denied tools stays unknown.
        for entry in missing {
            let server = entry["name"]
                .as_str()
                .filter(|n| may_see(profile, n))
                .and_then(|n| n.split_once("__"))
                .map(|(s, _)| s);
            if let Some(state) = unavailable
                .iter()
                .find(|u| server.is_some_and(|s| u["server"] == s))
            {
                entry["server_state"] = state.clone();
            }
        }
    }
    result["unavailable"] = Value::Array(unavailable);
    result
}

/// Waits for the servers of the tools a [`get_tools`] call names (`args.names`) that are still
/// starting, each at most its startup timeout: a model that asks for a tool right after
/// connecting gets its declaration, not a note that the server is starting. Names `profile`
/// denies are not waited for: the wait would tell the script that their server exists.
pub(crate) async fn wait_for_named_servers(
    upstreams: &UpstreamPool,
    args: &Value,
    profile: Option<&Profile>,
) {
    let names = args["names"]
        .as_array()
        .into_iter()
        .flatten()
        .take(MAX_GET_NAMES);
    let seen = names
        .filter_map(Value::as_str)
        .filter(|n| may_see(profile, n));
    for server in seen.filter_map(|n| n.split_once("__").map(|(s, _)| s)) {
        if upstreams.is_starting(server) {
            upstreams.wait_started(server).await;
        }
    }
}

/// `search_tools`: `{query, limit?}` → `{results: [{name, description, call, score}]}`.
pub fn search_tools(tools: &[ToolInfo], args: &Value) -> Result<Value, ToolError> {
    let query = args
        .get("query")
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::failed("`query` (a string) is required"))?;
    if query.len() > MAX_QUERY_BYTES {
        return Err(ToolError::failed(format!(
            "`query` is {} bytes long; search_tools takes at most {MAX_QUERY_BYTES} (a few keywords)",
            query.len()
        )));
    }
    let limit = match args.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(v) => v
            .as_u64()
            .filter(|&n| n >= 1)
            .map(|n| (n as usize).min(MAX_LIMIT))
            .ok_or_else(|| ToolError::failed("`limit` must be a positive integer"))?,
    };
    let hits = ToolInfo::search(tools, query, limit);
    Ok(json!({ "results": hits }))
}

/// `get_tools`: `{names}` → `{declarations, missing}`; unknown names come with suggestions. A
/// tool that declares no result type is typed by what `observed` has seen of it.
pub fn get_tools(
    tools: &[ToolInfo],
    args: &Value,
    observed: &ObservedTypes,
) -> Result<Value, ToolError> {
    let names: Vec<&str> = args
        .get("names")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .ok_or_else(|| ToolError::failed("`names` (an array of strings) is required"))?;
    if names.len() > MAX_GET_NAMES {
        return Err(ToolError::failed(format!(
            "`names` has {} entries; get_tools takes at most {MAX_GET_NAMES} per call",
            names.len()
        )));
    }
    if let Some(long) = names.iter().find(|n| n.len() > MAX_NAME_BYTES) {
        return Err(ToolError::failed(format!(
            "a name in `names` is {} bytes long; tool names are at most {MAX_NAME_BYTES}",
            long.len()
        )));
    }
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for name in names {
        match tools.iter().find(|t| t.name == name) {
            Some(t) => found.push(t.clone()),
            None => {
                // A typo's nearest names first (edit distance), then what a keyword search
                // ranks (a name the script half remembers).
                let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
                let mut near = codemode_runtime::closest(name, &names, 3);
                for hit in ToolInfo::search(tools, name, 3) {
                    if near.len() < 3 && !near.contains(&hit.name) {
                        near.push(hit.name);
                    }
                }
                missing.push(json!({"name": name, "did_you_mean": near}));
            }
        }
    }
    let declarations = ToolInfo::declarations_with(&found, &|t| observed.of(&t.name));
    Ok(json!({ "declarations": declarations, "missing": missing }))
}

/// What a model reads of a `get_tools` result: the declarations, then one comment line per
/// unknown name with its suggestions (clients often show the text only, not the structured
/// content). Names are [`neutralize`]d: the caller chose them.
pub(crate) fn get_tools_text(value: &Value) -> String {
    let mut text = value["declarations"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for missing in value["missing"].as_array().into_iter().flatten() {
        let name = quoted(missing["name"].as_str().unwrap_or_default());
        let near: Vec<String> = missing["did_you_mean"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|n| format!("`{}`", quoted(n)))
            .collect();
        let state = &missing["server_state"];
        if let Some(server) = state["server"].as_str() {
            let server = quoted(server);
            let why = match state["state"].as_str() {
                Some("starting") => "is starting: ask again in a moment".to_string(),
                Some(other) => format!(
                    "is {other}: {}",
                    codemode_policies::neutralize(
                        state["error"].as_str().unwrap_or("no reason given")
                    )
                ),
                None => "is not up".to_string(),
            };
            text.push_str(&format!(
                "\n// `{name}` is not listed: the server `{server}` {why}"
            ));
            continue;
        }
        let hint = if near.is_empty() {
            "; search_tools({query}) finds tools by keywords".to_string()
        } else {
            format!("; did you mean {}?", near.join(", "))
        };
        text.push_str(&format!("\n// unknown tool `{name}`{hint}"));
    }
    text
}

/// The tool host of one eval.
pub struct ScriptTools {
    upstreams: UpstreamPool,
    asker: Arc<dyn Asker>,
    profile: Option<Arc<Profile>>,
    /// The result types the profile's scripts have seen, for `get_tools`.
    observed: ObservedTypes,
    scope: CallScope,
    /// The eval's trace: each upstream call is an `upstream_request` span.
    trace: Option<crate::traces::EvalTrace>,
}

impl ScriptTools {
    /// Upstream tools plus built-ins; `hitl_request`, and the upstreams' own elicitations
    /// during this eval's calls, ask through `asker`.
    pub fn new(upstreams: UpstreamPool, asker: Arc<dyn Asker>) -> Self {
        let scope = CallScope::default()
            .with_elicitor(Some(Arc::new(ForwardElicitation::new(asker.clone()))));
        ScriptTools {
            observed: ObservedTypes::new(upstreams.clone(), None, Arc::default()),
            upstreams,
            asker,
            profile: None,
            scope,
            trace: None,
        }
    }

    /// Where the upstreams' progress and log messages about this eval's calls go. Default:
    /// none (dropped).
    pub(crate) fn with_relay(mut self, relay: Option<Arc<dyn CallRelay>>) -> Self {
        self.scope = self.scope.with_relay(relay);
        self
    }

    /// Where the media of upstream results go (the eval's store). Default: a store of this
    /// host's own, of [`codemode_upstream::Media::DEFAULT_MAX_BYTES`].
    pub(crate) fn with_media(mut self, media: Media) -> Self {
        self.scope = self.scope.with_media(media);
        self
    }

    /// Who answers the upstreams' sampling requests during this eval's calls. Default: none
    /// (refused).
    pub(crate) fn with_sampler(mut self, sampler: Option<Arc<dyn CallSampler>>) -> Self {
        self.scope = self.scope.with_sampler(sampler);
        self
    }

    /// The eval's trace. Default: none (no spans).
    pub(crate) fn with_trace(mut self, trace: Option<crate::traces::EvalTrace>) -> Self {
        self.trace = trace;
        self
    }

    /// Calls upstream tool `name`, in an `upstream_request` span when the eval is traced.
    async fn call_upstream(
        &self,
        name: &str,
        args: Value,
        cx: &CallContext,
    ) -> Result<Value, ToolError> {
        let Some(trace) = &self.trace else {
            return self.upstreams.call_in(name, args, cx, &self.scope).await;
        };
        let span = trace.upstream_request(cx.call_id);
        let scope = self
            .scope
            .clone()
            .with_traceparent(Some(span.traceparent()));
        let result = self.upstreams.call_in(name, args, cx, &scope).await;
        span.end(name, result.is_ok());
        result
    }

    /// The eval's profile: `search_tools` and `get_tools` show only what it lets the script
    /// call (see [`visible_to`]), typing results as `observed` (the profile's view of them).
    /// Default: none (everything, results as unrestricted scripts received them).
    pub(crate) fn with_profile(
        mut self,
        profile: Option<Arc<Profile>>,
        observed: ObservedTypes,
    ) -> Self {
        self.profile = profile;
        self.observed = observed;
        self
    }

    /// `search_tools` / `get_tools`, ranked off the async executor: the eval's wall-clock
    /// deadline (enforced by the runtime around every call in flight) ends the eval on time even
    /// if a large catalog makes the ranking slow, and the inputs are capped so the work behind
    /// it stays bounded too.
    async fn discover(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        let search = name == SEARCH_TOOLS;
        if !search {
            wait_for_named_servers(&self.upstreams, &args, self.profile.as_deref()).await;
        }
        let tools = catalog(&self.upstreams);
        let profile = self.profile.clone();
        let observed = self.observed.clone();
        let ranked = tokio::task::spawn_blocking(move || {
            let (tools, asked) = visible_to(tools, profile.as_deref());
            let result = if search {
                search_tools(&tools, &args)?
            } else {
                get_tools(&tools, &args, &observed)?
            };
            Ok(mark_asked(result, &asked))
        });
        match ranked.await {
            Ok(result) => {
                result.map(|r| mark_unavailable(r, &self.upstreams, self.profile.as_deref()))
            }
            Err(e) => Err(ToolError::failed(format!("`{name}` did not finish: {e}"))),
        }
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
            SEARCH_TOOLS | GET_TOOLS => Box::pin(self.discover(name, args)),
            // Each step waits for a human under `awaiting_human`: that time does not count
            // against the eval's timeout, and the eval may park meanwhile.
            hitl::TOOL_NAME | hitl::ALIAS => Box::pin(async move {
                let request_id = format!("hitl-{}-{}", cx.eval_id, cx.call_id);
                Ok(hitl::run(&args, self.asker.as_ref(), &request_id, cx).await)
            }),
            // Like a call: an upstream's elicitation meanwhile may reach this eval's human.
            read_resource::TOOL_NAME => Box::pin(async move {
                let scope = (self.profile.as_deref(), &self.scope);
                read_resource::run(&self.upstreams, scope, args.clone()).await
            }),
            _ if !name.contains("__") && self.upstreams.commands().contains(name) => {
                Box::pin(async move { self.upstreams.commands().call(name, args).await })
            }
            _ => Box::pin(self.call_upstream(name, args, cx)),
        }
    }

    fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = builtin_infos().into_iter().map(|t| t.name).collect();
        names.extend(self.upstreams.commands().names());
        names.extend(self.upstreams.tool_names());
        names
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod builtin_names_tests {
    /// The config refuses command tools named like a built-in: its list must be this one.
    #[test]
    fn the_config_knows_every_builtin_name() {
        let ours: Vec<String> = super::builtin_infos().into_iter().map(|t| t.name).collect();
        assert_eq!(ours, codemode_config::BUILTIN_TOOL_NAMES);
    }
}
