//! One MCP client on one keep-alive HTTP/1.1 connection: what a real SDK client sends to a
//! streamable HTTP server, request after request on the same socket.
//!
//! [`Protocol::Stateless`] sends 2026-07-28 requests (no `initialize`; the protocol version
//! and client capabilities in every request's `_meta` and headers). [`Protocol::Legacy`] opens a
//! 2025-11-25 session (`initialize`, `notifications/initialized`, then every call carries
//! `Mcp-Session-Id`) and deletes it when done.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

/// Which generation of the MCP protocol a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// 2026-07-28: stateless requests, no `initialize`.
    Stateless,
    /// 2025-11-25: an `initialize`d session per client.
    Legacy,
}

impl Protocol {
    /// The name used in options and reports.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Stateless => "2026-07-28",
            Protocol::Legacy => "2025-11-25",
        }
    }

    /// `2026-07-28`/`stateless` or `2025-11-25`/`legacy`.
    ///
    /// # Errors
    /// For any other name.
    pub fn parse(text: &str) -> Result<Self, crate::BenchError> {
        match text {
            "2026-07-28" | "stateless" => Ok(Protocol::Stateless),
            "2025-11-25" | "legacy" => Ok(Protocol::Legacy),
            other => Err(format!(
                "unknown protocol `{other}`: expected `stateless` (2026-07-28) or `legacy` (2025-11-25)"
            )
            .into()),
        }
    }
}

/// An MCP client on one connection.
pub struct Client {
    sender: SendRequest<Full<Bytes>>,
    /// `host:port`, for the `Host` header.
    authority: String,
    /// The path of the MCP endpoint (`/mcp`).
    path: String,
    protocol: Protocol,
    /// The legacy session's id.
    session: Option<String>,
    next_id: u64,
    capabilities: Value,
}

impl Client {
    /// Connects to `url` (`http://HOST:PORT/PATH`) and, for [`Protocol::Legacy`], opens a
    /// session.
    ///
    /// # Errors
    /// When the connection or the session cannot be opened.
    pub async fn connect(url: &str, protocol: Protocol) -> Result<Self, crate::BenchError> {
        Self::connect_with(url, protocol, json!({})).await
    }

    /// [`Client::connect`] declaring `capabilities` (e.g. `{"elicitation": {}}`): in
    /// `initialize` for a legacy session, in every request's `_meta` for stateless requests.
    ///
    /// # Errors
    /// When the connection or the session cannot be opened.
    pub async fn connect_with(
        url: &str,
        protocol: Protocol,
        capabilities: Value,
    ) -> Result<Self, crate::BenchError> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("only http:// URLs are supported, got `{url}`"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let tcp = tokio::net::TcpStream::connect(authority)
            .await
            .map_err(|e| format!("cannot connect to {authority}: {e}"))?;
        // As every HTTP client library does: without it, Nagle meets delayed ACKs.
        let _ = tcp.set_nodelay(true);
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| format!("HTTP handshake with {authority}: {e}"))?;
        tokio::spawn(connection);
        let mut client = Client {
            sender,
            authority: authority.to_string(),
            path: path.to_string(),
            protocol,
            session: None,
            next_id: 0,
            capabilities,
        };
        if protocol == Protocol::Legacy {
            client.initialize().await?;
        }
        Ok(client)
    }

    async fn initialize(&mut self) -> Result<(), String> {
        let params = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": self.capabilities,
            "clientInfo": {"name": "codemode-bench", "version": env!("CARGO_PKG_VERSION")}
        });
        let (headers, _) = self.post("initialize", None, params).await?;
        self.session = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        if self.session.is_none() {
            return Err("the server opened no session (no Mcp-Session-Id)".into());
        }
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.send("notifications/initialized", None, &note).await?;
        Ok(())
    }

    /// Calls tool `tool` with `arguments`; returns the call's `result` when it completed and was
    /// not an error result.
    ///
    /// # Errors
    /// A transport failure, a JSON-RPC error, or a tool result with `isError: true`, in words.
    pub async fn call_tool(
        &mut self,
        tool: &str,
        arguments: Value,
    ) -> Result<Value, crate::BenchError> {
        let result = self.call_tool_outcome(tool, arguments).await?;
        if result.get("isError") == Some(&Value::Bool(true)) {
            return Err(format!("error result: {}", short(&result)).into());
        }
        if let Some(kind) = result.get("resultType").and_then(Value::as_str)
            && kind != "complete"
        {
            return Err(format!("result type `{kind}`: {}", short(&result)).into());
        }
        Ok(result)
    }

    /// Calls tool `tool` with `arguments`; returns the call's `result` whatever it is: complete
    /// (an error result included) or input-required.
    ///
    /// # Errors
    /// A transport failure or a JSON-RPC error, in words.
    pub async fn call_tool_outcome(
        &mut self,
        tool: &str,
        arguments: Value,
    ) -> Result<Value, crate::BenchError> {
        let mut params = json!({"name": tool, "arguments": arguments});
        if self.protocol == Protocol::Stateless {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": self.capabilities,
                "io.modelcontextprotocol/clientInfo":
                    {"name": "codemode-bench", "version": env!("CARGO_PKG_VERSION")}
            });
        }
        let (_, result) = self.post("tools/call", Some(tool), params).await?;
        Ok(result)
    }

    /// Calls tool `tool` and reads the response's messages until one satisfies `until` (e.g.
    /// the server's `elicitation/create` request); returns that message and drops the whole
    /// connection without answering — a client that goes away in the middle of a call.
    ///
    /// # Errors
    /// A transport failure, or a response that ends without such a message.
    pub async fn call_tool_then_disconnect(
        mut self,
        tool: &str,
        arguments: Value,
        until: impl Fn(&Value) -> bool,
    ) -> Result<Value, crate::BenchError> {
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments}});
        let request = self
            .request_builder("tools/call", Some(tool))
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| format!("building the request: {e}"))?;
        self.sender
            .ready()
            .await
            .map_err(|e| format!("tools/call: connection lost: {e}"))?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|e| format!("tools/call: {e}"))?;
        Ok(read_until(response.into_body(), until).await?)
    }

    /// The legacy session's id.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Opens the legacy session's standalone stream (`GET`, on a connection of its own: where
    /// the server sends its own requests, such as `elicitation/create`), reads it until a
    /// message satisfies `until`, and drops the connection. `session` is
    /// [`Client::session`] of the client that opened it.
    ///
    /// # Errors
    /// A transport failure, or a stream that ends without such a message.
    pub async fn listen_then_disconnect(
        url: &str,
        session: &str,
        until: impl Fn(&Value) -> bool,
    ) -> Result<Value, crate::BenchError> {
        let mut client = Client::connect_with(url, Protocol::Stateless, json!({})).await?;
        let request = Request::get(&client.path)
            .header("host", &client.authority)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", Protocol::Legacy.name())
            .header("mcp-session-id", session)
            .body(Full::new(Bytes::new()))
            .map_err(|e| format!("building the request: {e}"))?;
        let response = client
            .sender
            .send_request(request)
            .await
            .map_err(|e| format!("GET: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("GET: HTTP {}", response.status()).into());
        }
        Ok(read_until(response.into_body(), until).await?)
    }

    /// Ends the legacy session (`DELETE`); nothing for stateless clients.
    pub async fn close(mut self) {
        if let Some(session) = self.session.take() {
            let request = Request::delete(&self.path)
                .header("host", &self.authority)
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", self.protocol.name())
                .body(Full::new(Bytes::new()));
            if let Ok(request) = request
                && let Ok(response) = self.sender.send_request(request).await
            {
                let _ = response.into_body().collect().await;
            }
        }
    }

    /// POSTs request `method` and returns the response's headers and JSON-RPC `result`.
    async fn post(
        &mut self,
        method: &str,
        name: Option<&str>,
        params: Value,
    ) -> Result<(hyper::HeaderMap, Value), String> {
        self.next_id += 1;
        let body =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        let (headers, text) = self.send(method, name, &body).await?;
        let message = last_message(&text)
            .ok_or_else(|| format!("{method}: no JSON-RPC message in the response: {text:.200}"))?;
        if let Some(error) = message.get("error") {
            return Err(format!("{method}: JSON-RPC error {error}"));
        }
        match message.get("result") {
            Some(result) => Ok((headers, result.clone())),
            None => Err(format!("{method}: a response without result: {text:.200}")),
        }
    }

    /// POSTs `body` and reads the whole response.
    async fn send(
        &mut self,
        method: &str,
        name: Option<&str>,
        body: &Value,
    ) -> Result<(hyper::HeaderMap, String), String> {
        let request = self
            .request_builder(method, name)
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| format!("{method}: building the request: {e}"))?;
        self.finish_send(method, request).await
    }

    /// A POST of `method` with the headers of this client's protocol.
    fn request_builder(&self, method: &str, name: Option<&str>) -> hyper::http::request::Builder {
        let mut request = Request::post(&self.path)
            .header("host", &self.authority)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", self.protocol.name());
        if self.protocol == Protocol::Stateless {
            request = request.header("mcp-method", method);
            if let Some(name) = name {
                request = request.header("mcp-name", name);
            }
        }
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        request
    }

    async fn finish_send(
        &mut self,
        method: &str,
        request: Request<Full<Bytes>>,
    ) -> Result<(hyper::HeaderMap, String), String> {
        self.sender
            .ready()
            .await
            .map_err(|e| format!("{method}: connection lost: {e}"))?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|e| format!("{method}: {e}"))?;
        let status = response.status();
        let (parts, body) = response.into_parts();
        let bytes = body
            .collect()
            .await
            .map_err(|e| format!("{method}: reading the response: {e}"))?
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if !status.is_success() {
            return Err(format!("{method}: HTTP {status}: {text:.200}"));
        }
        Ok((parts.headers, text))
    }
}

/// Reads an SSE body until a message satisfies `until`.
async fn read_until(
    mut body: hyper::body::Incoming,
    until: impl Fn(&Value) -> bool,
) -> Result<Value, String> {
    let mut text = String::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("reading the response: {e}"))?;
        if let Some(data) = frame.data_ref() {
            text.push_str(&String::from_utf8_lossy(data));
            for line in text.lines().filter_map(|l| l.strip_prefix("data:")) {
                if let Ok(message) = serde_json::from_str::<Value>(line.trim())
                    && until(&message)
                {
                    return Ok(message);
                }
            }
        }
    }
    Err(format!(
        "the response ended without the message awaited: {text:.300}"
    ))
}

/// The last JSON-RPC message of a response: a JSON body, or the last `data:` line of an SSE
/// stream that parses as JSON.
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

fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_message_of_json_and_sse_bodies() {
        let json = r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#;
        assert_eq!(last_message(json).unwrap()["result"]["a"], 1);
        let sse = "id: 0\nretry: 3000\ndata: \n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"b\":2}}\n\n";
        assert_eq!(last_message(sse).unwrap()["result"]["b"], 2);
        assert_eq!(last_message("data: nope\n\n"), None);
    }

    #[test]
    fn protocols_by_name() {
        assert_eq!(Protocol::parse("legacy"), Ok(Protocol::Legacy));
        assert_eq!(Protocol::parse("2026-07-28"), Ok(Protocol::Stateless));
        assert_eq!(
            Protocol::parse("2024"),
            Err("unknown protocol `2024`: expected `stateless` (2026-07-28) or `legacy` (2025-11-25)".into())
        );
    }
}
