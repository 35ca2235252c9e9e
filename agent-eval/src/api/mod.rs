//! The two model APIs: what a request carries and how a reply is read. Each API's module knows
//! only its own JSON shapes; [`Chat`] keeps the conversation in the API's own message format, so
//! what is sent back is exactly what the model sent (ids, order), plus the tool results.

mod anthropic;
mod openai;
mod wire;

use std::collections::HashSet;
use std::time::Duration;

use reqwest::header::HeaderValue;
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

/// A reply body larger than this is refused, and read no further: a case's conversation is
/// kept in memory.
const MAX_REPLY_BYTES: usize = 4 << 20;

/// The tool calls one reply may ask for: each runs a script, and each result is kept.
pub const MAX_CALLS_PER_TURN: usize = 64;

/// Checks a model endpoint's base URL: `http` or `https`, and nothing that the API's path
/// cannot follow or that would be printed with it in every error (a query, a fragment, a user
/// name or password: the key goes in the variable of `--api-key-env`).
///
/// # Errors
/// Why the URL cannot be used; the URL itself is not repeated (it may hold a secret).
pub fn check_model_url(url: &str) -> Result<(), String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| format!("the model URL is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "the model URL's scheme is `{}`; it must be http or https",
            parsed.scheme()
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("the model URL holds a user name or password, which every error would print; give the key with --api-key-env".into());
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err("the model URL has a query or fragment; the API's path is appended to the URL, so it must end with its path".into());
    }
    Ok(())
}

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
                match key.as_deref().map(HeaderValue::from_str) {
                    Some(Ok(mut value)) => {
                        // Kept out of the HTTP stack's debug output, as `bearer_auth` does.
                        value.set_sensitive(true);
                        request.header("x-api-key", value)
                    }
                    Some(Err(_)) => return Err("the API key is not a valid header value".into()),
                    None => request,
                }
            }
            (Api::OpenAi, None) => request,
        };
        let mut response = request
            .send()
            .await
            .map_err(|e| format!("POST {url}: {}", without_url(&e)))?;
        let status = response.status();
        let too_big = || format!("POST {url}: the reply is over {MAX_REPLY_BYTES} bytes");
        if response
            .content_length()
            .is_some_and(|n| n > MAX_REPLY_BYTES as u64)
        {
            return Err(too_big());
        }
        // Read chunk by chunk, so that an endless body stops at the bound, not at memory's end.
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("POST {url}: reading the reply: {}", without_url(&e)))?
        {
            if bytes.len() + chunk.len() > MAX_REPLY_BYTES {
                return Err(too_big());
            }
            bytes.extend_from_slice(&chunk);
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
fn without_url(e: &reqwest::Error) -> String {
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
    /// The ids of the tool calls asked for so far: each is answered once, by its id.
    call_ids: HashSet<String>,
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
            call_ids: HashSet::new(),
        }
    }

    /// Reads the model's reply and appends its message to the conversation.
    ///
    /// A reply whose calls cannot all be answered unambiguously is an error: over
    /// [`MAX_CALLS_PER_TURN`] calls, or a call id that is empty or was used before (two results
    /// of one id could not be told apart).
    pub fn take_reply(&mut self, body: &Value) -> Result<Reply, String> {
        let (message, reply) = match self.api {
            Api::OpenAi => openai::reply(body)?,
            Api::Anthropic => anthropic::reply(body)?,
        };
        if let Reply::Calls(calls) = &reply {
            if calls.len() > MAX_CALLS_PER_TURN {
                return Err(format!(
                    "the reply asks for {} tool calls; at most {MAX_CALLS_PER_TURN} are answered per turn",
                    calls.len()
                ));
            }
            for call in calls {
                if call.id.is_empty() {
                    return Err("a tool call has an empty id".into());
                }
                if !self.call_ids.insert(call.id.clone()) {
                    return Err(format!(
                        "the tool call id `{}` is used twice; each call needs its own",
                        excerpt(&call.id)
                    ));
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool_use(id: &str) -> Value {
        json!({"type": "tool_use", "id": id, "name": "eval", "input": {"code": "1"}})
    }

    /// A reply that reuses a call id (in one turn or a later one) or gives none cannot be
    /// answered unambiguously: it ends the case instead of sending two results of one id.
    #[test]
    fn agent_eval_reused_or_empty_call_ids_are_refused() {
        let mut chat = Chat::new(Api::Anthropic, "p", &[]);
        let twice = json!({"content": [tool_use("toolu_1"), tool_use("toolu_1")]});
        assert_eq!(
            chat.take_reply(&twice).unwrap_err(),
            "the tool call id `toolu_1` is used twice; each call needs its own"
        );
        let mut chat = Chat::new(Api::Anthropic, "p", &[]);
        let first = json!({"content": [tool_use("toolu_1")]});
        assert!(matches!(chat.take_reply(&first), Ok(Reply::Calls(_))));
        assert_eq!(
            chat.take_reply(&first).unwrap_err(),
            "the tool call id `toolu_1` is used twice; each call needs its own"
        );
        let mut chat = Chat::new(Api::OpenAi, "p", &[]);
        let empty = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
            {"id": "", "type": "function", "function": {"name": "eval", "arguments": "{}"}}
        ]}}]});
        assert_eq!(
            chat.take_reply(&empty).unwrap_err(),
            "a tool call has an empty id"
        );
    }

    /// One reply may ask for at most MAX_CALLS_PER_TURN calls: each result is kept in memory.
    #[test]
    fn agent_eval_calls_per_turn_are_bounded() {
        let mut chat = Chat::new(Api::Anthropic, "p", &[]);
        let many: Vec<Value> = (0..=MAX_CALLS_PER_TURN)
            .map(|i| tool_use(&format!("toolu_{i}")))
            .collect();
        assert_eq!(
            chat.take_reply(&json!({"content": many})).unwrap_err(),
            "the reply asks for 65 tool calls; at most 64 are answered per turn"
        );
    }

    /// A model URL is refused when it holds what every error would print, or what the API's
    /// path cannot follow; the error never repeats the URL.
    #[test]
    fn agent_eval_model_url_checks() {
        assert_eq!(check_model_url("https://api.openai.com/v1"), Ok(()));
        let userinfo = check_model_url("https://me:sk-secret@proxy.example/v1").unwrap_err();
        assert!(
            userinfo.starts_with("the model URL holds a user name or password"),
            "{userinfo}"
        );
        assert!(!userinfo.contains("sk-secret"));
        let query = check_model_url("https://host.example/v1?key=sk-secret").unwrap_err();
        assert!(
            query.starts_with("the model URL has a query or fragment"),
            "{query}"
        );
        assert!(!query.contains("sk-secret"));
        assert_eq!(
            check_model_url("ftp://host.example").unwrap_err(),
            "the model URL's scheme is `ftp`; it must be http or https"
        );
        assert!(
            check_model_url("not a url")
                .unwrap_err()
                .starts_with("the model URL is not a URL: ")
        );
    }
}
