//! `codemode approve --url URL [--token-env VAR]`: a terminal approver on the HTTP approval API.
//!
//! Streams the requests (`GET /approvals/stream`) and shows them one at a time, oldest first:
//! risk, tool, caller, the argument summary, the script's call sites, and a countdown to the
//! automatic denial; the keys `[a]pprove [e]val [s]ession [d]ecline [v]iew full args` (only the
//! decisions the request's risk policy allows), a reason when one is required. A request decided
//! elsewhere (another approver, the client's own prompt) or expired is withdrawn from the screen.
//! `hitl_request` questions are shown with their numbered options (`[1-n] answer [d]ecline`).
//! A request this approver may not decide (its risk level's `approvers` name a permission the
//! token lacks) is announced on one line with why, and not queued.
//! Every script-chosen text is neutralised ([`codemode_policies::neutralize`]).

use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use codemode_policies::{is_blank, neutralize};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::common::EXIT_USAGE;

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The approval API: the listener's base URL (http://127.0.0.1:8181) or its page's URL.
    #[arg(long, value_name = "URL")]
    url: String,

    /// The environment variable holding the bearer token (a token with permission `approve`).
    /// Without it, no token is sent (an unauthenticated loopback server).
    #[arg(long, value_name = "VAR")]
    token_env: Option<String>,
}

/// What the loop waits for.
enum Input {
    /// A Server-Sent Event: name and data.
    Event(String, Value),
    /// The stream ended, with why.
    StreamEnded(String),
    /// The server ended the stream at its lifetime (`server.http.maxStreamLifetime`): open it
    /// again.
    Renew,
    /// A line typed at the terminal.
    Line(String),
    /// The terminal closed (Ctrl-D).
    Eof,
}

/// The API's base URL: `URL` without a trailing `/`, `/approvals/ui` or `/approvals`.
fn base_url(url: &str) -> String {
    let url = url.trim_end_matches('/');
    let url = url.strip_suffix("/approvals/ui").unwrap_or(url);
    url.strip_suffix("/approvals").unwrap_or(url).to_string()
}

/// `scheme://host[:port]` of `base`, sent as `Origin` (an unauthenticated loopback server
/// requires its own origin on decisions).
fn origin_of(base: &str) -> String {
    match base.find("://") {
        Some(i) => {
            let rest = &base[i + 3..];
            let host = rest.split('/').next().unwrap_or(rest);
            format!("{}://{host}", &base[..i])
        }
        None => base.to_string(),
    }
}

pub async fn approve(args: ApproveArgs) -> ExitCode {
    let token = match &args.token_env {
        Some(var) => match std::env::var(var) {
            Ok(t) if !t.trim().is_empty() => Some(t.trim().to_string()),
            _ => {
                eprintln!("codemode approve: the environment variable `{var}` holds no token");
                return ExitCode::from(EXIT_USAGE);
            }
        },
        None => None,
    };
    let base = base_url(&args.url);
    let client = codemode_upstream::crypto::http_client();
    let response = match open_stream(&client, &base, token.as_deref()).await {
        Ok(r) => r,
        Err(why) => {
            eprintln!("codemode approve: {why}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    eprintln!("connected to {base}; waiting for approval requests (Ctrl-D quits)");
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(read_stream(response, tx.clone()));
    let renewals = (client.clone(), base.clone(), token.clone(), tx.clone());
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(Input::Line(line)).is_err() {
                return;
            }
        }
        let _ = tx.send(Input::Eof);
    });
    let mut ui = Screen::new(client, base, token);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            input = rx.recv() => match input {
                Some(Input::Event(name, data)) => ui.event(&name, data),
                Some(Input::Line(line)) => ui.line(line.trim()).await,
                Some(Input::Renew) => {
                    let (client, base, token, tx) = &renewals;
                    match open_stream(client, base, token.as_deref()).await {
                        Ok(response) => {
                            tokio::spawn(read_stream(response, tx.clone()));
                        }
                        Err(why) => {
                            eprintln!("\nthe approval stream ended and cannot be reopened: {why}");
                            return ExitCode::from(1);
                        }
                    }
                }
                Some(Input::StreamEnded(why)) => {
                    eprintln!("\nthe approval stream ended: {}", neutralize(&why));
                    return ExitCode::from(1);
                }
                Some(Input::Eof) | None => return ExitCode::SUCCESS,
            },
            _ = tick.tick() => ui.countdown(),
        }
    }
}

/// Opens `GET /approvals/stream`; `Err`: why not, to print.
async fn open_stream(
    client: &reqwest::Client,
    base: &str,
    token: Option<&str>,
) -> Result<reqwest::Response, String> {
    let mut request = client.get(format!("{base}/approvals/stream"));
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    let response = request.send().await.map_err(|e| {
        // `{:#}`: with its causes, which say why (a refused connection, a certificate).
        format!("cannot reach {base}: {:#}", anyhow::Error::new(e))
    })?;
    if !response.status().is_success() {
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        return Err(format!(
            "{base}/approvals/stream answered {status}: {}",
            neutralize(body.trim())
        ));
    }
    Ok(response)
}

/// Reads Server-Sent Events into `tx`. A stream the server ends at its lifetime is renewed
/// ([`Input::Renew`]); one ended for another reason ends the approver.
async fn read_stream(response: reqwest::Response, tx: mpsc::UnboundedSender<Input>) {
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut end_reason = None;
    while let Some(chunk) = body.next().await {
        let chunk = match chunk {
            Ok(c) => c,
            Err(e) => {
                let _ = tx.send(Input::StreamEnded(e.to_string()));
                return;
            }
        };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let mut name = "message".to_string();
            let mut data = Vec::new();
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event:") {
                    name = n.trim().to_string();
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push(d.strip_prefix(' ').unwrap_or(d).to_string());
                }
            }
            if let Ok(value) = serde_json::from_str::<Value>(&data.join("\n")) {
                if name == "end" {
                    end_reason = value["reason"].as_str().map(str::to_string);
                } else {
                    let _ = tx.send(Input::Event(name, value));
                }
            }
        }
    }
    let _ = tx.send(match end_reason.as_deref() {
        Some("max_stream_lifetime") => Input::Renew,
        Some("credential_expired") => {
            Input::StreamEnded("the token expired; start again with a new one".into())
        }
        _ => Input::StreamEnded("the server closed it".into()),
    });
}

/// A shown request: its data, and when it is denied automatically on this machine's clock.
struct Shown {
    req: Value,
    deadline: Instant,
    /// Waiting for the reason of this decision.
    reason_for: Option<&'static str>,
}

struct Screen {
    client: reqwest::Client,
    base: String,
    token: Option<String>,
    queue: VecDeque<Shown>,
}

/// The keys and the decisions they give.
const KEYS: [(&str, &str, &str); 5] = [
    ("a", "approve_once", "[a]pprove"),
    ("e", "approve_eval", "[e]val"),
    ("s", "approve_session", "[s]ession"),
    ("r", "approve_remember", "[r]emember"),
    ("d", "decline", "[d]ecline"),
];

fn text(v: &Value, key: &str) -> String {
    neutralize(v[key].as_str().unwrap_or("-"))
}

impl Screen {
    fn new(client: reqwest::Client, base: String, token: Option<String>) -> Self {
        Screen {
            client,
            base,
            token,
            queue: VecDeque::new(),
        }
    }

    fn event(&mut self, name: &str, req: Value) {
        let id = req["id"].as_str().unwrap_or_default().to_string();
        match name {
            "requested" => {
                if self.queue.iter().any(|s| s.req["id"] == id.as_str()) {
                    return;
                }
                // Shown, but not queued: an ask this approver may not decide (its risk level
                // names approvers it is not one of) must not hold up the ones it may.
                if req["decidable"] == false {
                    eprintln!(
                        "\n[risk {}] `{}` from caller {} (request {}): you cannot decide this: {}",
                        text(&req, "risk").to_uppercase(),
                        text(&req, "tool"),
                        text(&req, "caller"),
                        short(&id),
                        text(&req, "cannot_decide")
                    );
                    self.prompt();
                    return;
                }
                let timeout = Duration::from_millis(req["timeout_ms"].as_u64().unwrap_or(0));
                self.queue.push_back(Shown {
                    req,
                    deadline: Instant::now() + timeout,
                    reason_for: None,
                });
                if self.queue.len() == 1 {
                    self.show();
                }
            }
            "decided" | "expired" => {
                let Some(i) = self.queue.iter().position(|s| s.req["id"] == id.as_str()) else {
                    return;
                };
                self.queue.remove(i);
                let what = match name {
                    "expired" => "expired (denied automatically)".to_string(),
                    _ => format!(
                        "{} by {} via {}",
                        text(&req, "decision"),
                        text(&req, "decided_by"),
                        text(&req, "channel")
                    ),
                };
                eprintln!("\n  {} {}: {what}", text(&req, "tool"), short(&id));
                if i == 0 {
                    self.show();
                }
            }
            _ => {}
        }
    }

    fn allowed(req: &Value) -> Vec<(&'static str, &'static str, &'static str)> {
        let allowed: Vec<&str> = req["allowed_decisions"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        KEYS.iter()
            .copied()
            .filter(|(_, d, _)| allowed.contains(d))
            .collect()
    }

    /// Shows the request at the head of the queue.
    fn show(&self) {
        let Some(shown) = self.queue.front() else {
            eprintln!("\nwaiting for approval requests…");
            return;
        };
        let r = &shown.req;
        if r["kind"] == "question" {
            let message: Vec<String> = r["args"]["question"]
                .as_str()
                .unwrap_or_default()
                .split('\n')
                .map(neutralize)
                .collect();
            let mut out = format!(
                "\n[question] from caller {} (eval {}, request {})\n{}\n",
                text(r, "caller"),
                text(r, "eval_id"),
                short(r["id"].as_str().unwrap_or_default()),
                message.join("\n")
            );
            for (i, option) in options(r).iter().enumerate() {
                out.push_str(&format!("  {}) {}\n", i + 1, neutralize(option)));
            }
            eprint!("{out}");
            self.prompt();
            return;
        }
        let mut out = format!(
            "\n[risk {}, {}] `{}` wants approval (caller {}, profile {}, eval {}, request {})\n",
            text(r, "risk").to_uppercase(),
            text(r, "classification"),
            text(r, "tool"),
            text(r, "caller"),
            text(r, "profile"),
            text(r, "eval_id"),
            short(r["id"].as_str().unwrap_or_default()),
        );
        if let Some(reason) = r["rule_reason"].as_str() {
            out.push_str(&format!("Rule: {}\n", neutralize(reason)));
        }
        // The summary's own lines stay lines (it is neutralised on the server already).
        let summary: Vec<String> = r["args_summary"]
            .as_str()
            .unwrap_or_default()
            .split('\n')
            .map(neutralize)
            .collect();
        out.push_str(&format!("Arguments:\n{}\n", summary.join("\n")));
        if let Some(sites) = r["call_sites"].as_array().filter(|s| !s.is_empty()) {
            out.push_str("The script's tool calls:\n");
            for s in sites {
                let tool = match s["tool"].as_str() {
                    Some(t) => neutralize(t),
                    None => "(computed at run time)".into(),
                };
                out.push_str(&format!("  line {}:{}  {tool}\n", s["line"], s["column"]));
            }
        }
        if self.queue.len() > 1 {
            out.push_str(&format!("({} more waiting)\n", self.queue.len() - 1));
        }
        eprint!("{out}");
        self.prompt();
    }

    fn prompt(&self) {
        let Some(shown) = self.queue.front() else {
            return;
        };
        let left = shown
            .deadline
            .saturating_duration_since(Instant::now())
            .as_secs();
        if shown.req["kind"] == "question" {
            eprint!(
                "\r[1-{}] answer [d]ecline (denied automatically in {left:>3} s) > ",
                options(&shown.req).len()
            );
        } else if shown.reason_for.is_some() {
            eprint!("\r  reason (required; denied automatically in {left:>3} s) > ");
        } else {
            let keys: Vec<String> = Self::allowed(&shown.req)
                .iter()
                .map(
                    |(_, decision, label)| match shown.req["remember_for"].as_str() {
                        // "From now on" says for how long.
                        Some(period) if *decision == "approve_remember" => {
                            format!("{label} (for {})", neutralize(period))
                        }
                        _ => (*label).to_string(),
                    },
                )
                .collect();
            eprint!(
                "\r{} [v]iew full args (denied automatically in {left:>3} s) > ",
                keys.join(" ")
            );
        }
        let _ = std::io::stderr().flush();
    }

    fn countdown(&self) {
        if !self.queue.is_empty() {
            self.prompt();
        }
    }

    async fn line(&mut self, line: &str) {
        let Some(shown) = self.queue.front_mut() else {
            return;
        };
        if let Some(decision) = shown.reason_for {
            if is_blank(line) {
                eprintln!("  a reason is required at this risk level");
                self.prompt();
                return;
            }
            shown.reason_for = None;
            self.decide(decision, Some(line.to_string())).await;
            return;
        }
        if shown.req["kind"] == "question" {
            let opts = options(&shown.req);
            let body = match line
                .parse::<usize>()
                .ok()
                .and_then(|n| opts.get(n.wrapping_sub(1)))
            {
                Some(option) => json!({"decision": "answer", "answer": option}),
                None if line == "d" => json!({"decision": "decline"}),
                None => {
                    eprintln!("  type a number from 1 to {}, or d", opts.len());
                    self.prompt();
                    return;
                }
            };
            self.send(body).await;
            return;
        }
        if line == "v" {
            let full = serde_json::to_string_pretty(&shown.req["args"]).unwrap_or_default();
            let lines: Vec<String> = full.split('\n').map(neutralize).collect();
            eprintln!("\nFull arguments:\n{}", lines.join("\n"));
            self.prompt();
            return;
        }
        let allowed = Self::allowed(&shown.req);
        let Some((_, decision, _)) = allowed.iter().find(|(k, _, _)| *k == line) else {
            let keys: Vec<&str> = allowed.iter().map(|k| k.0).collect();
            eprintln!("  type one of {} or v", keys.join(", "));
            self.prompt();
            return;
        };
        if shown.req["reason_required"] == true {
            shown.reason_for = Some(decision);
            self.prompt();
            return;
        }
        self.decide(decision, None).await;
    }

    async fn decide(&mut self, decision: &str, reason: Option<String>) {
        let mut body = json!({"decision": decision});
        if let Some(r) = reason {
            body["reason"] = json!(r);
        }
        self.send(body).await;
    }

    /// Posts `body` for the request at the head of the queue.
    async fn send(&mut self, body: Value) {
        let Some(shown) = self.queue.front() else {
            return;
        };
        let id = shown.req["id"].as_str().unwrap_or_default().to_string();
        let decision = body["decision"].as_str().unwrap_or_default().to_string();
        let mut request = self
            .client
            .post(format!("{}/approvals/{id}", self.base))
            .json(&body);
        request = match &self.token {
            Some(t) => request.bearer_auth(t),
            // An unauthenticated (loopback) server takes decisions from its own origin only.
            None => request.header("Origin", origin_of(&self.base)),
        };
        match request.send().await {
            Ok(r) if r.status().is_success() => {
                eprintln!("\n  {decision}: sent");
                // The `decided` event removes it from the queue and shows the next one.
            }
            Ok(r) => {
                let status = r.status();
                let body: Value = r.json().await.unwrap_or(Value::Null);
                eprintln!(
                    "\n  refused ({status}): {}",
                    neutralize(body["error"].as_str().unwrap_or("-"))
                );
                self.prompt();
            }
            Err(e) => {
                eprintln!("\n  cannot send the decision: {e}");
                self.prompt();
            }
        }
    }
}

/// A question's options.
fn options(req: &Value) -> Vec<String> {
    req["options"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The first 8 hex digits of a request id (enough to tell requests apart on screen).
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::{base_url, origin_of};

    #[test]
    fn urls() {
        for (url, base, origin) in [
            (
                "http://127.0.0.1:8181",
                "http://127.0.0.1:8181",
                "http://127.0.0.1:8181",
            ),
            (
                "http://127.0.0.1:8181/",
                "http://127.0.0.1:8181",
                "http://127.0.0.1:8181",
            ),
            (
                "http://localhost:1/approvals/ui",
                "http://localhost:1",
                "http://localhost:1",
            ),
            (
                "https://ops.example/gw/approvals",
                "https://ops.example/gw",
                "https://ops.example",
            ),
        ] {
            assert_eq!(base_url(url), base, "{url}");
            assert_eq!(origin_of(&base_url(url)), origin, "{url}");
        }
    }
}
