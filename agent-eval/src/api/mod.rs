//! The two model APIs: what a request carries and how a reply is read. Each API's module knows
//! only its own JSON shapes; [`Chat`] keeps the conversation in the API's own message format, so
//! what is sent back is exactly what the model sent (ids, order), plus the tool results.

mod anthropic;
mod openai;
mod wire;

use std::time::Duration;

use serde_json::Value;

pub(crate) use wire::{Reply, ToolCall, ToolSpec, excerpt};

/// Which API the model endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// OpenAI-compatible chat completions: `POST {url}/chat/completions`, `tools` as
    /// functions, `tool_calls` answered by `role: tool` messages.
    OpenAi,
    /// Anthropic messages: `POST {url}/v1/messages`, `tools` with `input_schema`, `tool_use`
    /// answered by `tool_result` blocks.
    Anthropic,
}

/// A model endpoint.
pub(crate) struct Endpoint {
    api: Api,
    url: String,
    model: String,
    key: Option<String>,
    client: reqwest::Client,
}

/// A reply body larger than this is refused: a case's conversation is kept in memory.
const MAX_REPLY_BYTES: usize = 4 << 20;

impl Endpoint {
    /// An endpoint at `url` (without the API's path); `timeout` bounds each request.
    pub fn new(
        api: Api,
        url: &str,
        model: &str,
        key: Option<String>,
        timeout: Duration,
    ) -> Result<Endpoint, String> {
        codemode_upstream::crypto::install();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Endpoint {
            api,
            url: url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            key,
            client,
        })
    }

    /// Sends the conversation; the reply's body, or what went wrong (never the key).
    pub async fn send(&self, chat: &Chat) -> Result<Value, String> {
        let (path, body) = match self.api {
            Api::OpenAi => (
                "/chat/completions",
                openai::request(&self.model, &chat.messages, &chat.tools),
            ),
            Api::Anthropic => (
                "/v1/messages",
                anthropic::request(&self.model, &chat.messages, &chat.tools),
            ),
        };
        let url = format!("{}{path}", self.url);
        let mut request = self.client.post(&url).json(&body);
        request = match (self.api, &self.key) {
            (Api::OpenAi, Some(key)) => request.bearer_auth(key),
            (Api::Anthropic, key) => {
                let request = request.header("anthropic-version", anthropic::VERSION);
                match key {
                    Some(key) => request.header("x-api-key", key),
                    None => request,
                }
            }
            (Api::OpenAi, None) => request,
        };
        let response = request
            .send()
            .await
            .map_err(|e| format!("POST {url}: {}", without_query(&e)))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| format!("POST {url}: reading the reply: {}", without_query(&e)))?;
        if bytes.len() > MAX_REPLY_BYTES {
            return Err(format!(
                "POST {url}: the reply is over {MAX_REPLY_BYTES} bytes"
            ));
        }
        let text = String::from_utf8_lossy(&bytes);
        if !status.is_success() {
            return Err(format!("POST {url}: HTTP {status}: {}", excerpt(&text)));
        }
        serde_json::from_str(&text).map_err(|e| {
            format!(
                "POST {url}: the reply is not JSON ({e}): {}",
                excerpt(&text)
            )
        })
    }
}

/// reqwest's error without its URL (already named by the caller).
fn without_query(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    if let Some(url) = e.url() {
        text = text.replace(url.as_str(), "the endpoint");
    }
    text
}

/// A conversation in one API's message format.
pub(crate) struct Chat {
    api: Api,
    messages: Vec<Value>,
    tools: Value,
}

impl Chat {
    /// A conversation that starts with the user's `prompt`, `tools` offered.
    pub fn new(api: Api, prompt: &str, tools: &[ToolSpec]) -> Chat {
        let tools = match api {
            Api::OpenAi => openai::tools(tools),
            Api::Anthropic => anthropic::tools(tools),
        };
        let messages = vec![serde_json::json!({"role": "user", "content": prompt})];
        Chat {
            api,
            messages,
            tools,
        }
    }

    /// Reads the model's reply and appends its message to the conversation.
    pub fn take_reply(&mut self, body: &Value) -> Result<Reply, String> {
        let (message, reply) = match self.api {
            Api::OpenAi => openai::reply(body)?,
            Api::Anthropic => anthropic::reply(body)?,
        };
        self.messages.push(message);
        Ok(reply)
    }

    /// Appends the results of `calls` (each `(call, text, is_error)`), in the calls' order.
    pub fn add_results(&mut self, results: &[(ToolCall, String, bool)]) {
        match self.api {
            Api::OpenAi => self.messages.extend(openai::results(results)),
            Api::Anthropic => self.messages.push(anthropic::results(results)),
        }
    }
}
