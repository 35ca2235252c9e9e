//! The server's protocol logic in one process: [`CodemodeServer`] on one end of a
//! `tokio::io::duplex` pipe, an rmcp client on the other (as rmcp's own tests drive a peer). No
//! child processes and no upstreams: what is checked is codemode's MCP surface (the listed
//! tools and their schemas, eval results as structured content, JSON-RPC errors, a profile's
//! denial, syntax-error positions). The real Python and TypeScript clients are the other
//! modules' job.

use std::sync::LazyLock;

use super::eval_tools::{EVAL_TOOL, PROFILE_TOOL_PREFIX};
use super::{CodemodeServer, ServerState};
use codemode_policies::Config;
use codemode_runtime::{Runtime, RuntimeConfig};
use rmcp::model::{CallToolRequestParams, CallToolResult, ErrorCode};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::{ServiceExt, model::Tool};
use serde_json::{Value, json};

/// One runtime for every test of this module (a clone shares the compiled guest).
static RUNTIME: LazyLock<Runtime> =
    LazyLock::new(|| Runtime::new(&RuntimeConfig::default()).expect("building the runtime"));

/// No upstreams; profile `ro` denies the built-in `search_tools`, profile `a` allows everything.
const CONFIG: &str = r#"{
  "evaluation": {
    "profiles": {
      "ro": { "denylist": ["search_tools"] },
      "a": {}
    }
  }
}"#;

/// A client connected to a fresh server for `config` over an in-memory pipe.
async fn connect(config: &str) -> RunningService<RoleClient, ()> {
    let config = Config::from_json_str(config).expect("a valid config");
    connect_to(ServerState::new(RUNTIME.clone(), config).await).await
}

/// A client connected to a fresh server on `state`.
async fn connect_to(state: std::sync::Arc<ServerState>) -> RunningService<RoleClient, ()> {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let server = CodemodeServer::new(state)
            .serve(server_io)
            .await
            .expect("the server's side of the handshake");
        // Runs until the client goes away.
        let _ = server.waiting().await;
    });
    ().serve(client_io)
        .await
        .expect("the client's side of the handshake")
}

/// `tools/call name {code}`.
async fn call_code<S: rmcp::Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    tool: &str,
    code: &str,
) -> Result<CallToolResult, ServiceError> {
    let args = json!({ "code": code });
    client
        .call_tool(
            CallToolRequestParams::new(tool.to_string())
                .with_arguments(args.as_object().cloned().expect("an object")),
        )
        .await
}

/// The structured content of a successful `tools/call`, checking `isError` against its `ok`.
#[track_caller]
fn structured(result: &CallToolResult) -> &Value {
    let outcome = result
        .structured_content
        .as_ref()
        .unwrap_or_else(|| panic!("no structured content: {result:?}"));
    assert_eq!(
        result.is_error,
        Some(outcome["ok"] == false),
        "isError is the negation of ok: {result:?}"
    );
    outcome
}

/// The ledger as `[tool, status, reason]` rows.
fn ledger(outcome: &Value) -> Value {
    let rows: Vec<Value> = outcome["tool_calls"]
        .as_array()
        .unwrap_or_else(|| panic!("no ledger: {outcome}"))
        .iter()
        .map(|c| json!([c["tool"], c["status"], c["reason"]]))
        .collect();
    Value::Array(rows)
}

fn named<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_names_each_profile_once_without_output_schemas() {
    let client = connect(CONFIG).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            EVAL_TOOL,
            &format!("{PROFILE_TOOL_PREFIX}a"),
            &format!("{PROFILE_TOOL_PREFIX}ro"),
            "search_tools",
            "get_tools",
        ]
    );
    for name in ["eval", "codemode_eval_a", "codemode_eval_ro"] {
        let tool = named(&tools, name);
        assert_eq!(
            Value::Object((*tool.input_schema).clone()),
            json!({"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}),
            "{name}"
        );
        // The text block says it all; an output schema repeated on each eval tool cost ~1.7 KB.
        assert_eq!(tool.output_schema, None, "{name}");
    }
    // The first eval tool teaches; the others say only what differs.
    let description = |name: &str| named(&tools, name).description.clone().unwrap_or_default();
    assert!(
        description("eval").ends_with("Runs unrestricted (no profile)."),
        "{}",
        description("eval")
    );
    assert_eq!(
        description("codemode_eval_ro"),
        "`eval` under profile `ro`. Allows: everything else. Denies: search_tools."
    );
    client.cancel().await.expect("close the client");
}

/// The default profile's tool is `eval`: its `codemode_eval_<profile>` alias is not listed
/// again, but still runs for clients that call it by that name; a caller who may not use
/// `eval` sees the alias instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_profile_is_listed_once_as_eval() {
    let client = connect(
        r#"{"evaluation": {"defaultProfile": "sup", "profiles": {"sup": {}, "ro": {"denylist": ["x"]}}}}"#,
    )
    .await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        ["eval", "codemode_eval_ro", "search_tools", "get_tools"]
    );
    let alias = call_code(&client, "codemode_eval_sup", "1 + 1")
        .await
        .expect("the alias still runs");
    assert_eq!(structured(&alias)["result"], 2);
    client.cancel().await.expect("close the client");

    let client = connect(
        r#"{"evaluation": {"defaultProfile": "sup", "evalRequiresPermissions": ["ops"],
             "profiles": {"sup": {}, "ro": {"denylist": ["x"]}}}}"#,
    )
    .await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "codemode_eval_ro",
            "codemode_eval_sup",
            "search_tools",
            "get_tools"
        ]
    );
    let first = tools[0].description.clone().unwrap_or_default();
    assert!(first.starts_with("Run JavaScript in a sandbox"), "{first}");
    assert_eq!(
        tools[1].description.as_deref(),
        Some("`codemode_eval_ro` under profile `sup`. Allows: everything.")
    );
    client.cancel().await.expect("close the client");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_returns_the_outcome_as_structured_content() {
    let client = connect(CONFIG).await;
    let result = call_code(&client, "eval", "console.log('hi'); 1 + 2")
        .await
        .expect("tools/call eval");
    let outcome = structured(&result);
    assert_eq!(outcome["ok"], true, "{outcome}");
    assert_eq!(outcome["result"], 3);
    assert_eq!(outcome["error"], Value::Null);
    assert_eq!(outcome["logs"], json!([{"level": "log", "message": "hi"}]));
    assert_eq!(outcome["tool_calls"], json!([]));
    let text: Vec<&str> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect();
    assert_eq!(text, ["Result:\n3\n\nLogs:\n[log] hi"]);
    client.cancel().await.expect("close the client");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_tool_or_missing_code_is_invalid_params() {
    let client = connect(CONFIG).await;
    let unknown = client
        .call_tool(CallToolRequestParams::new("nope"))
        .await
        .expect_err("an unknown tool is a protocol error");
    let ServiceError::McpError(error) = unknown else {
        panic!("expected a JSON-RPC error, got {unknown:?}");
    };
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(error.message, "unknown tool `nope`");

    let no_code = client
        .call_tool(CallToolRequestParams::new("eval"))
        .await
        .expect_err("an eval without code is a protocol error");
    let ServiceError::McpError(error) = no_code else {
        panic!("expected a JSON-RPC error, got {no_code:?}");
    };
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(error.message, "`code` (a string of JavaScript) is required");
    client.cancel().await.expect("close the client");
}

/// Calls `search_tools` from a script and reports what it caught.
const SEARCH_FROM_SCRIPT: &str = r#"try {
  const found = await codemode.search_tools({ query: "anything" });
  return { results: found.results.length };
} catch (e) {
  return { name: e.name, toolName: e.toolName, reason: e.reason, isDenied: e instanceof ToolCallDeniedError };
}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profiles_denied_call_throws_tool_call_denied_error() {
    let client = connect(CONFIG).await;
    let denied = call_code(&client, "codemode_eval_ro", SEARCH_FROM_SCRIPT)
        .await
        .expect("tools/call codemode_eval_ro");
    let outcome = structured(&denied);
    assert_eq!(
        outcome["ok"], true,
        "the script caught the denial: {outcome}"
    );
    assert_eq!(
        outcome["result"],
        json!({"name": "ToolCallDeniedError", "toolName": "search_tools", "reason": "denied", "isDenied": true})
    );
    assert_eq!(
        ledger(outcome),
        json!([["search_tools", "denied", "denied"]])
    );

    // The same script under a profile without the rule: the call runs.
    let allowed = call_code(&client, "codemode_eval_a", SEARCH_FROM_SCRIPT)
        .await
        .expect("tools/call codemode_eval_a");
    let outcome = structured(&allowed);
    assert_eq!(outcome["result"], json!({"results": 0}), "{outcome}");
    assert_eq!(ledger(outcome), json!([["search_tools", "ok", null]]));
    client.cancel().await.expect("close the client");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_syntax_error_has_its_line_and_column() {
    let client = connect(CONFIG).await;
    let result = call_code(&client, "eval", "let x = 1;\nlet y = ;\n")
        .await
        .expect("tools/call eval");
    let outcome = structured(&result);
    assert_eq!(
        outcome["error"],
        json!({
            "kind": "syntax",
            "message": "SyntaxError: unexpected token in expression: ';'",
            "line": 2,
            "column": 9,
            "stack": null
        }),
        "{outcome}"
    );
    assert_eq!(outcome["result"], Value::Null);
    let text = result.content[0].as_text().map(|t| t.text.as_str());
    assert_eq!(
        text,
        Some(
            "Error (syntax) at line 2, column 9: SyntaxError: unexpected token in expression: ';'"
        )
    );
    client.cancel().await.expect("close the client");
}

/// A hot reload whose limits do not fit the running engine (memory past the largest it was
/// sized for) is refused and the running config stays; one that fits is applied.
#[tokio::test]
async fn a_reload_past_the_engines_memory_is_refused() {
    let dir = codemode_test_support::scratch_dir("mcp", "reload-memory");
    let path = dir.join("config.json");
    let state = ServerState::new(RUNTIME.clone(), Config::default()).await;
    let max = RUNTIME.config().get_max_memory();

    std::fs::write(
        &path,
        format!(r#"{{"limits": {{"memory": "{}"}}}}"#, max + 65536),
    )
    .unwrap();
    assert!(!super::reload::reload(&state, &path).await);
    assert_eq!(
        state.config().limits.memory,
        Config::default().limits.memory
    );

    std::fs::write(&path, r#"{"limits": {"memory": "32MiB"}}"#).unwrap();
    assert!(super::reload::reload(&state, &path).await);
    assert_eq!(state.config().limits.memory, 32 << 20);
}

/// `limits.maxResultText` applies to the next result after a hot reload: the same result's text
/// block shrinks to the new budget while its structured content stays whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reloaded_max_result_text_applies_to_the_next_result() {
    let dir = codemode_test_support::scratch_dir("mcp", "reload-result-text");
    let path = dir.join("config.json");
    let state = ServerState::new(RUNTIME.clone(), Config::default()).await;
    let client = connect_to(state.clone()).await;
    let code = "return Array.from({length: 1000}, (_, i) => i);";
    let text = |r: &CallToolResult| {
        r.content[0]
            .as_text()
            .map(|t| t.text.clone())
            .unwrap_or_default()
    };
    let before = call_code(&client, "eval", code).await.expect("eval");
    let full: Vec<u32> = (0..1000).collect();
    assert_eq!(text(&before), format!("Result:\n{}", json!(full)));

    std::fs::write(&path, r#"{"limits": {"maxResultText": "256"}}"#).unwrap();
    assert!(super::reload::reload(&state, &path).await);
    let after = call_code(&client, "eval", code).await.expect("eval");
    let head: Vec<String> = (0..48).map(|i| i.to_string()).collect();
    let tail: Vec<String> = (976..1000).map(|i| i.to_string()).collect();
    assert_eq!(
        text(&after),
        format!(
            "Result (elided to 256 of 3,891 bytes):\n[{},\"… 928 more items …\",{}]",
            head.join(","),
            tail.join(",")
        )
    );
    // The structured content keeps the same budget as the text.
    let elided: Value = serde_json::from_str(text(&after).lines().nth(1).unwrap()).unwrap();
    assert_eq!(structured(&after)["result"], elided);
    assert_eq!(
        structured(&after)["result_elided"],
        json!({"kept": 256, "total": 3891})
    );
    client.cancel().await.expect("close the client");
}

/// A profile that requires permissions the caller lacks (here `local`, who has none) is not
/// listed, and calling its tool anyway is the JSON-RPC invalid-params error of a tool that does
/// not exist, word for word (issue 28 A.16: a hidden profile and what it requires are not
/// learnt by calling it); the base `eval` likewise with `evaluation.evalRequiresPermissions`,
/// and discovery (`search_tools` with `profile`) answers a hidden profile as an unknown one. A
/// profile's script-side `search_tools` lists only what the profile may call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissions_hide_eval_tools_and_profiles_filter_discovery() {
    let client = connect(
        r#"{"evaluation": {"evalRequiresPermissions": ["ops"], "profiles": {
             "pay": {"requirePermissions": ["payments", "refunds"]},
             "nosearch": {"denylist": ["get_tools"]}}}}"#,
    )
    .await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        names,
        ["codemode_eval_nosearch", "search_tools", "get_tools"]
    );

    for (tool, message) in [
        ("codemode_eval_pay", "unknown tool `codemode_eval_pay`"),
        ("codemode_eval_nope", "unknown tool `codemode_eval_nope`"),
        ("eval", "unknown tool `eval`"),
    ] {
        let refused = client
            .call_tool(
                CallToolRequestParams::new(tool)
                    .with_arguments(json!({"code": "1"}).as_object().unwrap().clone()),
            )
            .await
            .expect_err("refused before any eval");
        let ServiceError::McpError(error) = refused else {
            panic!("expected a JSON-RPC error, got {refused:?}");
        };
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{tool}");
        assert_eq!(error.message, message, "{tool}");
    }
    for profile in ["pay", "nope"] {
        let refused = client
            .call_tool(
                CallToolRequestParams::new("search_tools").with_arguments(
                    json!({"query": "x", "profile": profile})
                        .as_object()
                        .unwrap()
                        .clone(),
                ),
            )
            .await
            .expect_err("refused");
        let ServiceError::McpError(error) = refused else {
            panic!("expected a JSON-RPC error, got {refused:?}");
        };
        // Only the profiles the caller may use are named: `pay` stays hidden.
        assert_eq!(
            (error.code, error.message.as_ref()),
            (
                ErrorCode::INVALID_PARAMS,
                format!("unknown profile `{profile}`; profiles you may use: `nosearch`").as_str()
            )
        );
    }

    let found = call_code(
        &client,
        "codemode_eval_nosearch",
        "(await codemode.search_tools({query: 'tools declarations search', limit: 50})).results.map(r => r.name)",
    )
    .await
    .expect("the eval runs");
    let names = structured(&found)["result"].clone();
    assert!(
        names.as_array().is_some_and(|a| a.contains(&json!("search_tools"))
            && !a.contains(&json!("get_tools"))),
        "{names}"
    );
    client.cancel().await.expect("close the client");
}

/// Signals each `notifications/tools/list_changed` the server sends.
#[derive(Clone, Default)]
struct ToolChanges(std::sync::Arc<tokio::sync::Notify>);

impl rmcp::ClientHandler for ToolChanges {
    fn on_tool_list_changed(
        &self,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.0.notify_one();
        std::future::ready(())
    }
}

/// The server as a library value: `Server::builder(config)` served over an in-memory pipe,
/// given a new config through its reloader, and shut down through its token.
#[tokio::test]
async fn the_server_builder_serves_reloads_and_shuts_down() {
    use super::Server;
    let config = Config::from_json_str(CONFIG).expect("a valid config");
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let mut builder = Server::builder(config).runtime(RUNTIME.clone());
    let shutdown = builder.shutdown_token();
    let reloader = builder.reloader();
    let served = tokio::spawn(builder.serve_io(server_io));
    let changes = ToolChanges::default();
    let client = changes
        .clone()
        .serve(client_io)
        .await
        .expect("the client's side of the handshake");

    let result = call_code(&client, EVAL_TOOL, "return 1 + 2")
        .await
        .expect("an eval result");
    assert_eq!(structured(&result)["result"], 3);
    let names = |tools: Vec<Tool>| -> Vec<String> {
        let mut names: Vec<String> = tools.into_iter().map(|t| t.name.to_string()).collect();
        names.sort();
        names
    };
    let before = names(client.list_all_tools().await.expect("tools/list"));
    assert!(
        before.contains(&format!("{PROFILE_TOOL_PREFIX}ro")),
        "{before:?}"
    );
    assert!(
        !before.contains(&format!("{PROFILE_TOOL_PREFIX}added")),
        "{before:?}"
    );

    let reloaded = CONFIG.replace(r#""a": {}"#, r#""a": {}, "added": {}"#);
    reloader.reload(Config::from_json_str(&reloaded).expect("a valid config"));
    changes.0.notified().await;
    let after = names(client.list_all_tools().await.expect("tools/list"));
    assert!(
        after.contains(&format!("{PROFILE_TOOL_PREFIX}added")),
        "{after:?}"
    );

    shutdown.cancel();
    served
        .await
        .expect("the server task")
        .expect("a clean shutdown");
}
