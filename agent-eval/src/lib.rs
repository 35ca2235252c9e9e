//! # codemode-agent-eval
//!
//! `codemode agent-eval`: a tool-using model drives codemode as an agent would, and YAML cases
//! judge what it did. For each case, codemode's MCP server runs in this process with the
//! case's own audit directory (`session`); the model — an OpenAI-compatible chat-completions
//! endpoint or the Anthropic messages API ([`Api`]) — gets the case's prompt and exactly the
//! tools `tools/list` gives for the case's profile (its eval tool, `search_tools`,
//! `get_tools`); its calls go to the server until it answers, runs out of turns or time. The
//! verdict ([`CaseReport`]) rests on the answer and on the audit records the case produced.
//!
//! The harness's client answers no elicitation: a call that needs a human's approval is
//! decided by the profile's `elicitationFallback`, as with any client that cannot be asked.
//!
//! ```no_run
//! use std::path::PathBuf;
//!
//! use codemode_agent_eval::{Api, Options, check_profiles, load_cases, run_case};
//! use codemode_host::DEFAULT_CONFIG;
//! use codemode_policies::Config;
//! use codemode_runtime::{Runtime, RuntimeConfig};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let config = Config::from_json_str(DEFAULT_CONFIG)?;
//! let cases = load_cases(&[PathBuf::from("evals/")])?;
//! check_profiles(&cases, &config)?;
//! let mut options = Options::new(
//!     Api::OpenAi,
//!     "http://127.0.0.1:8000/v1".into(),
//!     "a-model".into(),
//!     config,
//!     PathBuf::from("eval-audit"),
//! );
//! options.api_key = std::env::var("MODEL_API_KEY").ok();
//! let runtime = Runtime::new(&RuntimeConfig::default())?;
//! for (index, case) in cases.iter().enumerate() {
//!     let report = run_case(&options, &runtime, index, case).await;
//!     println!("{}: {:?} {:?}", report.name, report.verdict, report.reasons);
//! }
//! # Ok(())
//! # }
//! ```

mod api;
mod case;
mod session;
mod verdict;

use std::path::{Path, PathBuf};
use std::time::Duration;

use codemode_policies::{AuditQuery, Config};
use codemode_runtime::{BoxFuture, Runtime};
use serde_json::{Map, Value};

pub use api::{Api, MAX_CALLS_PER_TURN, check_model_url};
pub use case::{Case, CaseError, Expect, MAX_CASE_BYTES, Outcome, load_cases};
pub use verdict::{CaseReport, Verdict};

use api::{Chat, Endpoint, Reply};
use session::Session;

/// The name of the default profile's eval tool (`codemode_eval_<profile>` for the others).
const EVAL_TOOL: &str = "eval";

/// How the cases run.
#[derive(Clone)]
pub struct Options {
    /// The model endpoint's API.
    pub api: Api,
    /// The endpoint's base URL (the API's path is appended).
    pub model_url: String,
    /// The model's name, sent in every request.
    pub model: String,
    /// The API key (from the environment; never printed).
    pub api_key: Option<String>,
    /// The config codemode runs each case with (its `audit.dir` is replaced by the case's).
    pub config: Config,
    /// The model's turns per case (a turn is one request). Default 12.
    pub max_turns: usize,
    /// One case's time for the model's turns and their tool calls. Default 300 s.
    pub case_timeout: Duration,
    /// Where each case's audit directory is made (`<dir>/<case index>`).
    pub audit_root: PathBuf,
}

/// Everything but the key's value, which is never shown.
impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("api", &self.api)
            .field("model_url", &self.model_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("max_turns", &self.max_turns)
            .field("case_timeout", &self.case_timeout)
            .field("audit_root", &self.audit_root)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Options with the defaults above.
    pub fn new(
        api: Api,
        model_url: String,
        model: String,
        config: Config,
        audit_root: PathBuf,
    ) -> Options {
        Options {
            api,
            model_url,
            model,
            api_key: None,
            config,
            max_turns: 12,
            case_timeout: Duration::from_secs(300),
            audit_root,
        }
    }
}

/// Runs `case` (the `index`-th of the run) with `runtime`; never fails: what went wrong is
/// among the report's reasons.
pub fn run_case<'a>(
    options: &'a Options,
    runtime: &'a Runtime,
    index: usize,
    case: &'a Case,
) -> BoxFuture<'a, CaseReport> {
    Box::pin(async move {
        let dir = options.audit_root.join(index.to_string());
        let answer = converse(options, runtime, &dir, case).await;
        let mut report = match read_audit(&dir) {
            Ok(records) => verdict::judge(case, &answer, &records),
            Err(e) => {
                let mut report = verdict::judge(case, &answer, &[]);
                report.verdict = Verdict::Fail;
                report.reasons.push(e);
                report
            }
        };
        // An endpoint may echo the key (in an error about it, in a reply): the report never shows it.
        if let Some(key) = &options.api_key {
            report.redact(key);
        }
        report
    })
}

/// Checks that every case's `profile` is one of `config`'s, before any case runs: a case
/// that names no real profile is a mistake in the case file, not a model's failure.
///
/// # Errors
/// [`CaseError`] for the first case whose profile the config lacks, with the profiles it has.
pub fn check_profiles(cases: &[Case], config: &Config) -> Result<(), CaseError> {
    for case in cases {
        if let Some(profile) = &case.profile
            && config.profile(profile).is_none()
        {
            let names: Vec<&str> = config
                .evaluation
                .profiles
                .keys()
                .map(String::as_str)
                .collect();
            let known = if names.is_empty() {
                "it has none".to_string()
            } else {
                format!("it has {}", names.join(", "))
            };
            return Err(CaseError {
                path: case.path.clone(),
                message: format!(
                    "`profile: {}`: the config has no such profile ({known})",
                    codemode_policies::quoted(profile)
                ),
            });
        }
    }
    Ok(())
}

/// The case's config: its own audit directory (arguments included, for the evidence) and its
/// profile as the default one, so that the model's tool is `eval` with the full description.
fn case_config(options: &Options, dir: &Path, case: &Case) -> Result<Config, String> {
    let mut config = options.config.clone();
    config.audit.dir = Some(dir.to_path_buf());
    config.audit.include_args = true;
    if let Some(profile) = &case.profile {
        if config.profile(profile).is_none() {
            return Err(format!("the config has no profile `{profile}`"));
        }
        config.evaluation.default_profile = Some(profile.clone());
    }
    Ok(config)
}

/// The model loop with a server of its own; the final answer, or why there is none.
async fn converse(
    options: &Options,
    runtime: &Runtime,
    dir: &Path,
    case: &Case,
) -> Result<String, String> {
    let config = case_config(options, dir, case)?;
    let endpoint = Endpoint::new(
        options.api,
        &options.model_url,
        &options.model,
        options.api_key.clone(),
        options.case_timeout,
    )?;
    let session = Session::start(config, runtime.clone()).await?;
    // The time limit bounds the model's turns, not the server's finish: whatever the answer,
    // the server must finish for the case's audit log to be complete when it is read.
    let limit = options.case_timeout;
    let answer = match tokio::time::timeout(limit, turns(options, &endpoint, &session, case)).await
    {
        Ok(answer) => answer,
        Err(_) => Err(format!(
            "the case did not finish within {} s",
            limit.as_secs()
        )),
    };
    let finished = session.finish().await;
    let answer = answer?;
    finished?;
    Ok(answer)
}

/// Up to `max_turns` requests: each reply's tool calls answered, until one answers.
async fn turns(
    options: &Options,
    endpoint: &Endpoint,
    session: &Session,
    case: &Case,
) -> Result<String, String> {
    let tools = session.tools(EVAL_TOOL).await?;
    let mut chat = Chat::new(options.api, &case.prompt, &tools);
    for turn in 1..=options.max_turns {
        let body = endpoint
            .send(&chat)
            .await
            .map_err(|e| format!("model endpoint, turn {turn}: {e}"))?;
        let calls = match chat
            .take_reply(&body)
            .map_err(|e| format!("model endpoint, turn {turn}: {e}"))?
        {
            Reply::Answer(text) => return Ok(text),
            Reply::Calls(calls) => calls,
        };
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            let (text, is_error) = if tools.iter().any(|t| t.name == call.name) {
                session.call(&call.name, &call.arguments).await
            } else {
                let offered: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                (
                    format!(
                        "error: there is no tool `{}`; the tools are {}",
                        call.name,
                        offered.join(", ")
                    ),
                    true,
                )
            };
            results.push((call, text, is_error));
        }
        chat.add_results(&results);
    }
    let plural = if options.max_turns == 1 { "" } else { "s" };
    Err(format!(
        "no answer after {} turn{plural}",
        options.max_turns
    ))
}

/// The case's audit records, in the log's order (none when the directory was never made).
fn read_audit(dir: &Path) -> Result<Vec<Map<String, Value>>, String> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let result = AuditQuery::default()
        .run(dir)
        .map_err(|e| format!("reading the case's audit log: {e}"))?;
    Ok(result.records.into_iter().map(|r| r.fields).collect())
}
