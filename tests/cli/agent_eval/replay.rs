//! The replay endpoint: a local model API that plays back hand-written turns and checks each
//! request against the API's shape first (see the parent module).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{KEY, MODEL, fixtures, repo};

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Api {
    OpenAi,
    Anthropic,
}

/// The replay endpoint: the fixtures by prompt, and the mismatches seen.
pub(super) struct Replay {
    pub port: u16,
    pub mismatches: Arc<Mutex<Vec<String>>>,
}

/// Starts a replay endpoint for `api` playing the fixtures of `cases` from `dir`.
pub(super) fn replay(api: Api, dir: &Path, cases: &[&str]) -> Replay {
    let suffix = if api == Api::OpenAi {
        "openai"
    } else {
        "anthropic"
    };
    let mut by_prompt: HashMap<String, Vec<Value>> = HashMap::new();
    for case in cases {
        let yaml =
            std::fs::read_to_string(repo().join(format!("examples/agent-eval/cases/{case}.yaml")))
                .unwrap();
        let prompt_line = yaml.lines().find(|l| l.starts_with("prompt: ")).unwrap();
        let prompt: String = serde_json::from_str(&prompt_line["prompt: ".len()..]).unwrap();
        let fixture: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{case}.{suffix}.json"))).unwrap(),
        )
        .unwrap();
        by_prompt.insert(prompt, fixture["turns"].as_array().unwrap().clone());
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mismatches = Arc::new(Mutex::new(Vec::new()));
    let seen = mismatches.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let (status, body) = match read_request(&mut stream) {
                Ok((path, headers, body)) => match check(api, &path, &headers, &body, &by_prompt) {
                    Ok(reply) => (200, reply),
                    Err(why) => {
                        seen.lock().unwrap().push(why.clone());
                        (400, json!({"error": {"message": format!("replay: {why}")}}))
                    }
                },
                Err(why) => (400, json!({"error": why})),
            };
            let body = body.to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Replay { port, mismatches }
}

/// One HTTP/1.1 request: its path, headers (lower-case names) and JSON body.
pub(super) fn read_request(
    stream: &mut std::net::TcpStream,
) -> Result<(String, HashMap<String, String>, Value), String> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| e.to_string())?;
    let mut parts = line.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default().to_string(),
    );
    if method != "POST" {
        return Err(format!("expected POST, got {method}"));
    }
    let mut headers = HashMap::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).map_err(|e| e.to_string())?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .ok_or("no content-length")?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).map_err(|e| e.to_string())?;
    Ok((
        path,
        headers,
        serde_json::from_slice(&body).map_err(|e| e.to_string())?,
    ))
}

/// Checks a request against `api`'s shape; the fixture's next turn.
fn check(
    api: Api,
    path: &str,
    headers: &HashMap<String, String>,
    body: &Value,
    by_prompt: &HashMap<String, Vec<Value>>,
) -> Result<Value, String> {
    let want_path = if api == Api::OpenAi {
        "/chat/completions"
    } else {
        "/v1/messages"
    };
    ensure(
        path == want_path,
        format!("path {path}, expected {want_path}"),
    )?;
    ensure(
        headers.get("content-type").map(String::as_str) == Some("application/json"),
        "content-type",
    )?;
    match api {
        Api::OpenAi => ensure(
            headers.get("authorization") == Some(&format!("Bearer {KEY}")),
            "authorization: Bearer",
        )?,
        Api::Anthropic => {
            ensure(
                headers.get("x-api-key").map(String::as_str) == Some(KEY),
                "x-api-key",
            )?;
            ensure(
                headers.get("anthropic-version").map(String::as_str) == Some("2023-06-01"),
                "anthropic-version",
            )?;
            ensure(body["max_tokens"].is_u64(), "max_tokens")?;
        }
    }
    ensure(body["model"] == MODEL, format!("model {}", body["model"]))?;
    check_tools(api, &body["tools"])?;
    let messages = body["messages"].as_array().ok_or("no messages")?;
    let prompt = messages
        .first()
        .and_then(|m| m["content"].as_str())
        .ok_or("the first message is not the user's text")?;
    ensure(messages[0]["role"] == "user", "the first message's role")?;
    let turns = by_prompt
        .get(prompt)
        .ok_or_else(|| format!("no fixture for the prompt {prompt:?}"))?;
    let replies: Vec<&Value> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    // What the harness sent back is what was replayed, each call answered once, in order.
    for (i, sent) in replies.iter().enumerate() {
        let played = match api {
            Api::OpenAi => turns[i]["choices"][0]["message"].clone(),
            Api::Anthropic => json!({"role": "assistant", "content": turns[i]["content"]}),
        };
        ensure(
            **sent == played,
            format!("assistant message {i} differs from the replayed turn"),
        )?;
    }
    check_pairing(api, messages)?;
    turns
        .get(replies.len())
        .cloned()
        .ok_or_else(|| format!("the fixture has no turn {}", replies.len() + 1))
}

fn ensure(ok: bool, what: impl Into<String>) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("bad request: {}", what.into()))
    }
}

/// The tools: `eval`, `search_tools`, `get_tools`, each with its input schema under the API's
/// field name.
fn check_tools(api: Api, tools: &Value) -> Result<(), String> {
    let tools = tools.as_array().ok_or("no tools")?;
    let mut names = Vec::new();
    for tool in tools {
        let (def, schema) = match api {
            Api::OpenAi => {
                ensure(tool["type"] == "function", "tool type")?;
                (&tool["function"], &tool["function"]["parameters"])
            }
            Api::Anthropic => (tool, &tool["input_schema"]),
        };
        ensure(
            schema["type"] == "object",
            format!("the schema of {}", def["name"]),
        )?;
        ensure(
            def["description"].as_str().is_some_and(|d| !d.is_empty()),
            "a tool's description",
        )?;
        names.push(def["name"].as_str().ok_or("a tool's name")?.to_string());
    }
    names.sort();
    ensure(
        names == ["eval", "get_tools", "search_tools"],
        format!("tools {names:?}"),
    )
}

/// Each tool call answered right after its message, by its id, exactly once.
fn check_pairing(api: Api, messages: &[Value]) -> Result<(), String> {
    for (i, message) in messages.iter().enumerate() {
        if message["role"] != "assistant" {
            continue;
        }
        let (mut ids, mut answered): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
        match api {
            Api::OpenAi => {
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    ids.push(call["id"].as_str().unwrap_or_default());
                }
                for next in messages[i + 1..].iter().take_while(|m| m["role"] == "tool") {
                    ensure(next["content"].is_string(), "a tool message's content")?;
                    answered.push(next["tool_call_id"].as_str().unwrap_or_default());
                }
            }
            Api::Anthropic => {
                for block in message["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_use" {
                        ids.push(block["id"].as_str().unwrap_or_default());
                    }
                }
                if let Some(next) = messages.get(i + 1) {
                    ensure(next["role"] == "user", "the message after tool_use")?;
                    for block in next["content"].as_array().into_iter().flatten() {
                        ensure(block["type"] == "tool_result", "a tool_result block")?;
                        answered.push(block["tool_use_id"].as_str().unwrap_or_default());
                    }
                }
            }
        }
        ensure(
            ids == answered,
            format!("calls {ids:?} answered by {answered:?}"),
        )?;
    }
    Ok(())
}

/// The replay endpoint's checks catch what a wrong harness would send: a call left unanswered,
/// a result paired with the wrong id, a schema under the other API's field name, a missing
/// header.
#[test]
fn agent_eval_replay_checks_catch_mismatches() {
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("prices-total.anthropic.json")).unwrap(),
    )
    .unwrap();
    let turns = fixture["turns"].as_array().unwrap().clone();
    let prompt = "What is the total of the price column in data/prices.csv?";
    let by_prompt = HashMap::from([(prompt.to_string(), turns.clone())]);
    let headers = HashMap::from([
        ("content-type".to_string(), "application/json".to_string()),
        ("x-api-key".to_string(), KEY.to_string()),
        ("anthropic-version".to_string(), "2023-06-01".to_string()),
    ]);
    let tool =
        |name: &str| json!({"name": name, "description": "d", "input_schema": {"type": "object"}});
    let tools = json!([tool("eval"), tool("search_tools"), tool("get_tools")]);
    let result = |id: &str| json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "15"}]});
    let body = |messages: Value, tools: &Value| json!({"model": MODEL, "max_tokens": 10, "messages": messages, "tools": tools});
    let user = json!({"role": "user", "content": prompt});
    let assistant = json!({"role": "assistant", "content": turns[0]["content"]});
    let good = body(json!([user, assistant, result("toolu_1")]), &tools);
    let path = "/v1/messages";
    assert_eq!(
        check(Api::Anthropic, path, &headers, &good, &by_prompt),
        Ok(turns[1].clone())
    );
    let wrong_id = body(json!([user, assistant, result("toolu_9")]), &tools);
    assert_eq!(
        check(Api::Anthropic, path, &headers, &wrong_id, &by_prompt),
        Err(r#"bad request: calls ["toolu_1"] answered by ["toolu_9"]"#.to_string())
    );
    let openai_schema =
        json!([{"name": "eval", "description": "d", "parameters": {"type": "object"}}]);
    assert_eq!(
        check(
            Api::Anthropic,
            path,
            &headers,
            &body(json!([user]), &openai_schema),
            &by_prompt
        ),
        Err("bad request: the schema of \"eval\"".to_string())
    );
    let mut no_version = headers.clone();
    no_version.remove("anthropic-version");
    assert_eq!(
        check(Api::Anthropic, path, &no_version, &good, &by_prompt),
        Err("bad request: anthropic-version".to_string())
    );
}
