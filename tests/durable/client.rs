//! What a 2026-07-28 MCP client sends (each request a stateless POST on a connection of its
//! own, so a load balancer may send each one elsewhere), and the HTTP approval API.

use std::time::Duration;

use serde_json::{Value, json};

/// Longest one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A response, with the name of the node that answered (HAProxy's `X-Served-By`; empty when
/// the request went to a node directly).
#[derive(Debug, Clone)]
pub struct Reply {
    pub served_by: String,
    /// The JSON-RPC response's `result`, or `{"jsonrpc error": error}`.
    pub result: Value,
}

fn http() -> reqwest::Client {
    codemode_upstream::crypto::install();
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(REQUEST_TIMEOUT)
        .build()
        .expect("an HTTP client")
}

/// `tools/call` of `tool` with `arguments`, as a 2026-07-28 client that can elicit; with
/// `retry = Some((requestState, inputResponses))`, the retry answering an input-required
/// result.
pub async fn call_tool(
    url: &str,
    tool: &str,
    arguments: &Value,
    retry: Option<(&str, Value)>,
) -> Result<Reply, String> {
    call_tool_as(url, tool, arguments, retry, None).await
}

/// [`call_tool`] with `bearer` as the `Authorization` token, when given.
pub async fn call_tool_as(
    url: &str,
    tool: &str,
    arguments: &Value,
    retry: Option<(&str, Value)>,
    bearer: Option<&str>,
) -> Result<Reply, String> {
    let authorization = bearer.map(|token| format!("Bearer {token}"));
    let headers: Vec<(&str, &str)> = authorization
        .iter()
        .map(|value| ("authorization", value.as_str()))
        .collect();
    call_tool_with(url, (tool, arguments), retry, &headers).await
}

/// [`call_tool`] with more HTTP `headers` (a `traceparent`, an `Authorization`).
pub async fn call_tool_with(
    url: &str,
    (tool, arguments): (&str, &Value),
    retry: Option<(&str, Value)>,
    headers: &[(&str, &str)],
) -> Result<Reply, String> {
    let mut params = json!({
        "name": tool,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "durable-test", "version": "1"}
        }
    });
    if let Some((state, responses)) = retry {
        params["requestState"] = json!(state);
        params["inputResponses"] = responses;
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let mut request = http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| format!("tools/call to {url}: {e}"))?;
    let served_by = response
        .headers()
        .get("x-served-by")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let status = response.status().as_u16();
    let text = response
        .text()
        .await
        .map_err(|e| format!("reading the tools/call response: {e}"))?;
    let message = last_message(&text)
        .ok_or_else(|| format!("tools/call: HTTP {status}, no JSON-RPC response: {text:.300}"))?;
    let result = match (message.get("result"), message.get("error")) {
        (Some(result), _) => result.clone(),
        (None, Some(error)) => json!({"jsonrpc error": error}),
        _ => return Err(format!("tools/call: neither result nor error: {message}")),
    };
    Ok(Reply { served_by, result })
}

/// The last JSON-RPC response of a body: the JSON itself, or the last `data:` line of an SSE
/// stream with a `result` or an `error`.
fn last_message(text: &str) -> Option<Value> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        return serde_json::from_str(trimmed).ok();
    }
    text.lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
}

/// The keys of an input-required result's `inputRequests` (panics on any other result).
pub fn input_keys(result: &Value) -> Vec<String> {
    assert_eq!(result["resultType"], "input_required", "{result}");
    result["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("no inputRequests in {result}"))
        .keys()
        .cloned()
        .collect()
}

/// An input-required result's `requestState`.
pub fn request_state(result: &Value) -> String {
    result["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no requestState in {result}"))
        .to_string()
}

/// `inputResponses` approving (`approve_once`) every question of an input-required result.
pub fn approve_all(result: &Value) -> Value {
    Value::Object(
        input_keys(result)
            .into_iter()
            .map(|k| {
                (
                    k,
                    json!({"action": "accept", "content": {"decision": "approve_once"}}),
                )
            })
            .collect(),
    )
}

/// `GET {base}/approvals`: the pending asks.
pub async fn pending_approvals(base: &str) -> Result<Vec<Value>, String> {
    approvals(&format!("{base}/approvals")).await
}

/// `GET {base}/approvals?state=decided`: the last decisions, newest first.
pub async fn decided_approvals(base: &str) -> Result<Vec<Value>, String> {
    approvals(&format!("{base}/approvals?state=decided")).await
}

async fn approvals(url: &str) -> Result<Vec<Value>, String> {
    let base = url;
    let response = http()
        .get(url)
        .send()
        .await
        .map_err(|e| format!("GET {base}: {e}"))?;
    let status = response.status();
    let body: Value = response
        .json()
        .await
        .map_err(|e| format!("GET {base}: {e}"))?;
    if !status.is_success() {
        return Err(format!("GET {base}: HTTP {status}: {body}"));
    }
    Ok(body["approvals"].as_array().cloned().unwrap_or_default())
}

/// `POST {base}/approvals/{id}` with `decision` (as the listener's own origin, as a browser on
/// the approval page would); returns the status and the body.
pub async fn decide(base: &str, id: &str, decision: &str) -> Result<(u16, Value), String> {
    let response = http()
        .post(format!("{base}/approvals/{id}"))
        .header("content-type", "application/json")
        .header("origin", base)
        .body(json!({"decision": decision}).to_string())
        .send()
        .await
        .map_err(|e| format!("POST {base}/approvals/{id}: {e}"))?;
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    Ok((status, body))
}

/// `POST {base}/approvals/{id}` with `body` (a decision, or `{"decision": "answer", "answer":
/// …}` for a question), as `bearer` when given, else as the listener's own origin; returns the
/// status and the body.
pub async fn post_decision(
    base: &str,
    id: &str,
    body: &Value,
    bearer: Option<&str>,
) -> Result<(u16, Value), String> {
    let mut request = http()
        .post(format!("{base}/approvals/{id}"))
        .header("content-type", "application/json")
        .header("origin", base);
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    let response = request
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| format!("POST {base}/approvals/{id}: {e}"))?;
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    Ok((status, body))
}

/// `GET {base}/approvals` as `bearer`: the pending asks.
pub async fn pending_approvals_as(base: &str, bearer: &str) -> Result<Vec<Value>, String> {
    let url = format!("{base}/approvals");
    let response = http()
        .get(&url)
        .bearer_auth(bearer)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = response.status();
    let body: Value = response
        .json()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    if !status.is_success() {
        return Err(format!("GET {url}: HTTP {status}: {body}"));
    }
    Ok(body["approvals"].as_array().cloned().unwrap_or_default())
}

/// Runs `future` on a fresh current-thread runtime.
pub fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

/// `GET url` with the `Host` header `host` and `bearer` when given: `(status, body)`.
pub async fn get(
    url: &str,
    host: Option<&str>,
    bearer: Option<&str>,
) -> Result<(u16, String), String> {
    let mut request = http().get(url);
    if let Some(host) = host {
        request = request.header(reqwest::header::HOST, host);
    }
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    let response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let body = response.text().await.map_err(|e| e.to_string())?;
    Ok((status, body))
}
