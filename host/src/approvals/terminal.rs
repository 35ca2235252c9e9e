//! Asking the person at the terminal (`codemode run --profile` with an interactive stdin): the
//! question, the choices, and a countdown to the automatic answer (deny).
#![expect(
    clippy::print_stderr,
    reason = "the terminal approver talks to the person at the terminal, on stderr (stdout carries the script's result)"
)]

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use codemode_policies::{Channel, neutralize};
use codemode_runtime::BoxFuture;
use serde_json::{Value, json};

use super::{Answer, Ask, AskKind, Asker, Question, Reply};

mod form;

/// Prompts on stderr and reads answers from stdin, one question at a time.
#[derive(Default)]
pub struct TerminalAsker {
    /// One prompt at a time: concurrent calls of a script queue here.
    turn: tokio::sync::Mutex<()>,
    /// A single reader thread owns stdin; lines arrive here.
    lines: Mutex<Option<std::sync::mpsc::Receiver<String>>>,
}

impl TerminalAsker {
    /// Whether stdin and stderr are terminals (otherwise nobody can be asked).
    pub fn available() -> bool {
        std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
    }

    /// The next line typed before `deadline`; meanwhile a countdown says what then happens
    /// (`denied`, `declined`).
    fn next_line(&self, deadline: Instant, then: &str) -> Option<String> {
        let mut guard = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let rx = guard.get_or_insert_with(|| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                for line in std::io::stdin().lock().lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            rx
        });
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            match rx.recv_timeout(left.min(Duration::from_secs(1))) {
                Ok(line) => return Some(line),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    let secs = deadline.saturating_duration_since(Instant::now()).as_secs();
                    eprint!("\r  ({then} automatically in {secs:>3} s) > ");
                    let _ = std::io::stderr().flush();
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return None,
            }
        }
    }
}

/// A call's arguments in full, as pretty JSON, each line neutralised.
fn full_arguments(args: &Value) -> String {
    let pretty = serde_json::to_string_pretty(args).unwrap_or_default();
    let lines: Vec<String> = pretty.split('\n').map(neutralize).collect();
    format!("Full arguments:\n{}\n", lines.join("\n"))
}

/// The keys of an approval's decisions, as `codemode approve` has them: a decision is typed
/// by its number or its key.
const DECISION_KEYS: [(&str, &str); 5] = [
    ("approve_once", "a"),
    ("approve_tool_for_eval", "e"),
    ("approve_tool_for_session", "s"),
    ("approve_remember", "r"),
    ("decline", "d"),
];

/// The key of the approval decision `value`, if it has one.
fn decision_key(value: &Value) -> Option<&'static str> {
    DECISION_KEYS
        .iter()
        .find(|(decision, _)| value == decision)
        .map(|(_, key)| *key)
}

/// The option `line` picks: its number, or (for an approval, `keyed`) its decision's key.
fn picked<'a>(
    options: &'a [(Value, String)],
    line: &str,
    keyed: bool,
) -> Option<&'a (Value, String)> {
    if keyed && let Some(option) = options.iter().find(|(v, _)| decision_key(v) == Some(line)) {
        return Some(option);
    }
    line.parse::<usize>()
        .ok()
        .and_then(|n| options.get(n.wrapping_sub(1)))
}

/// Whether the form requires the field `name`.
fn requires(question: &Question, name: &str) -> bool {
    question
        .schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|v| v == name))
}

/// The first property of the form that has a fixed set of choices: `(name, [(value, title)])`.
pub fn choices(question: &Question) -> Option<(String, Vec<(Value, String)>)> {
    let props = question.schema.get("properties")?.as_object()?;
    props
        .iter()
        .find_map(|(name, prop)| Some((name.clone(), form::field_choices(prop)?)))
}

impl Asker for TerminalAsker {
    fn supports(&self) -> bool {
        true
    }

    fn channel(&self) -> Channel {
        Channel::Terminal
    }

    fn ask(&self, ask: Ask) -> BoxFuture<'_, Reply> {
        Box::pin(async move {
            let answer = match &ask.kind {
                AskKind::Form => self.prompt_form(&ask.question, ask.timeout).await,
                AskKind::Approval(req) => {
                    self.prompt(&ask.question, Some(&req.args), ask.timeout)
                        .await
                }
                AskKind::Choice => self.prompt(&ask.question, None, ask.timeout).await,
            };
            Reply::new(answer, Channel::Terminal)
        })
    }
}

impl TerminalAsker {
    /// Shows `question` and reads the answer, giving up after `timeout`; `v` shows the call's
    /// `full` arguments, when there are any (the question's summary may elide long values).
    async fn prompt(&self, question: &Question, full: Option<&Value>, timeout: Duration) -> Answer {
        let _turn = self.turn.lock().await;
        let Some((field, options)) = choices(question) else {
            return Answer::Failed("the terminal can only answer multiple-choice questions".into());
        };
        let deadline = Instant::now() + timeout;
        // The message's own lines stay lines; anything else that could move the cursor or
        // start an escape sequence is shown as an escape.
        let message: Vec<String> = question.message.split('\n').map(neutralize).collect();
        let mut text = format!("\n{}\n", message.join("\n"));
        // An approval's decisions also have the keys of `codemode approve`.
        let keyed = full.is_some();
        for (i, (value, title)) in options.iter().enumerate() {
            let key = match decision_key(value).filter(|_| keyed) {
                Some(key) => format!("[{key}] "),
                None => String::new(),
            };
            text.push_str(&format!("  {}) {key}{}\n", i + 1, neutralize(title)));
        }
        if full.is_some() {
            text.push_str("  v) view the full arguments\n");
        }
        text.push_str("Type a number (empty = decline): ");
        eprint!("{text}");
        let _ = std::io::stderr().flush();
        loop {
            let line = tokio::task::block_in_place(|| self.next_line(deadline, "denied"));
            let Some(line) = line else {
                eprintln!("\n  no answer: denied");
                return Answer::Timeout;
            };
            let line = line.trim();
            if line.is_empty() {
                return Answer::Decline;
            }
            if let (Some(args), "v") = (full, line) {
                eprint!("{}", full_arguments(args));
                eprint!("Type a number (empty = decline): ");
                let _ = std::io::stderr().flush();
                continue;
            }
            match picked(&options, line, keyed) {
                Some((value, _)) => {
                    let mut answer = json!({ field.clone(): value });
                    if requires(question, "reason") {
                        eprint!("  reason (required) > ");
                        let _ = std::io::stderr().flush();
                        let reason =
                            tokio::task::block_in_place(|| self.next_line(deadline, "denied"));
                        let Some(reason) = reason else {
                            eprintln!("\n  no answer: denied");
                            return Answer::Timeout;
                        };
                        answer["reason"] = json!(reason.trim());
                    }
                    return Answer::Accept(answer);
                }
                None => {
                    eprint!("  type a number from 1 to {} > ", options.len());
                    let _ = std::io::stderr().flush();
                }
            }
        }
    }
}

impl TerminalAsker {
    /// Puts an upstream's form to the person at the terminal, field by field, giving up after
    /// `timeout`.
    async fn prompt_form(&self, question: &Question, timeout: Duration) -> Answer {
        let _turn = self.turn.lock().await;
        let deadline = Instant::now() + timeout;
        let message: Vec<String> = question.message.split('\n').map(neutralize).collect();
        eprint!(
            "\n{}\n(Enter keeps the value in brackets; - declines the form)\n",
            message.join("\n")
        );
        let empty = serde_json::Map::new();
        let properties = question
            .schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut content = serde_json::Map::new();
        for (name, property) in properties {
            let required = requires(question, name);
            eprint!("{}", form::prompt_text(name, property, required));
            loop {
                let _ = std::io::stderr().flush();
                let line = tokio::task::block_in_place(|| self.next_line(deadline, "declined"));
                let Some(line) = line else {
                    eprintln!("\n  no answer: declined");
                    return Answer::Timeout;
                };
                match form::parse(property, &line, required) {
                    form::Field::Value(value) => {
                        content.insert(name.clone(), value);
                        break;
                    }
                    form::Field::Omitted => break,
                    form::Field::Decline => return Answer::Decline,
                    form::Field::Invalid(why) => eprint!("    {why} > "),
                }
            }
        }
        Answer::Accept(Value::Object(content))
    }
}
