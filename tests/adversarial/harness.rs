//! The in-process harness: one real `server-filesystem` upstream rooted in a scratch directory,
//! one profile that denies and asks, an audit log; each case's script runs as a governed eval
//! (the same wiring as `codemode run --config` and the MCP server), then every invariant the
//! suite promises is checked.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codemode_policies::AuditRecord;
use codemode_policies::Channel;
use codemode_policies::{Answer, Ask, Asker, Reply};
use codemode_runtime::BoxFuture;

use codemode_host::{AuditTarget, GovernedEval};
use codemode_policies::Caller;
use codemode_policies::{AuditWriter, Config};
use codemode_runtime::{
    CallStatus, CancellationToken, ErrorKind, EvalOptions, EvalOutcome, Runtime, RuntimeConfig,
};
use codemode_test_support::{peers, scratch_dir};
use codemode_upstream::{UpstreamPool, UpstreamSpec};
use serde_json::{Value, json};

/// What a case expects of its outcome.
#[derive(Debug, Clone)]
pub enum Expect {
    /// `ok: true` with exactly this result.
    Returns(Value),
    /// `ok: true`, any result.
    AnyResult,
    /// `ok: false` with this error kind.
    Kind(ErrorKind),
    /// Either a result or a classified failure: the attack only has to be contained.
    Contained,
}

/// One attack: a line of a table.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: &'static str,
    pub script: String,
    pub expect: Expect,
    /// Tools that must not have run (`ok` in the ledger) — the denied ones.
    pub must_not_run: &'static [&'static str],
    /// Options for this case; `None`: the fixture's defaults.
    pub options: Option<EvalOptions>,
    /// A check of its own, on top of the invariants every case has.
    pub check: Option<Check>,
}

/// What a case's own check sees.
pub struct Probe<'a> {
    pub outcome: &'a EvalOutcome,
    /// The MCP result's text block for the outcome (what most clients show the model).
    pub text: String,
    /// The messages the approval prompts showed, in order.
    pub asked: Vec<String>,
    /// The eval's `tool_call` audit records.
    pub audit_calls: &'a [Value],
}

/// A case's own check: `Err(why)` when the attack got through.
pub type Check = fn(&Probe<'_>) -> Result<(), String>;

/// `Case` with the usual defaults: no tool may run that the profile denies.
pub fn case(name: &'static str, script: impl Into<String>, expect: Expect) -> Case {
    Case {
        name,
        script: script.into(),
        expect,
        must_not_run: DENIED,
        options: None,
        check: None,
    }
}

impl Case {
    pub fn with_options(mut self, options: EvalOptions) -> Self {
        self.options = Some(options);
        self
    }

    pub fn checked(mut self, check: Check) -> Self {
        self.check = Some(check);
        self
    }
}

/// Tools the fixture's profile denies outright (denylist) or asks about with nobody to ask
/// (`elicitationFallback: deny`): none of them may ever run.
pub const DENIED: &[&str] = &["fs__move_file", "fs__create_directory", "fs__edit_file"];

/// The fixture: a scratch root with `public/` (writable) and `protected/` (a rule denies
/// writes there), `canary.txt` that no case may change, the upstream, the profile and the audit.
pub struct Fixture {
    pub root: PathBuf,
    runtime: Runtime,
    pool: UpstreamPool,
    config: Config,
    audit: Arc<AuditWriter>,
    asker: Arc<RecordingAsker>,
}

/// Declines every question, keeping what each one said.
#[derive(Default)]
pub struct RecordingAsker {
    messages: std::sync::Mutex<Vec<String>>,
}

impl RecordingAsker {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.messages.lock().unwrap())
    }
}

impl Asker for RecordingAsker {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> Channel {
        Channel::Elicitation
    }
    fn ask(&self, ask: Ask) -> BoxFuture<'_, Reply> {
        self.messages.lock().unwrap().push(ask.question.message);
        Box::pin(async { Reply::new(Answer::Decline, Channel::Elicitation) })
    }
}

pub const CANARY: &str = "canary: unchanged\n";

impl Fixture {
    /// The fixture, plus (with `nasty`) the misbehaving upstream `nasty` (`nasty_server.py`).
    pub async fn start_with(name: &str, nasty: bool) -> Fixture {
        peers::ensure_installed();
        let root = scratch_dir("adversarial", name);
        std::fs::create_dir_all(root.join("public")).unwrap();
        std::fs::create_dir_all(root.join("protected")).unwrap();
        std::fs::write(root.join("canary.txt"), CANARY).unwrap();
        let (command, args) = peers::filesystem_server_cmd(&root);
        let root_str = root.display().to_string();
        let mut servers = json!({ "fs": { "command": command, "args": args } });
        if nasty {
            let script =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/adversarial/nasty_server.py");
            servers["nasty"] = json!({ "command": peers::python(), "args": [script] });
        }
        let config = json!({
            "mcpServers": servers,
            "evaluation": {
                "defaultProfile": "adv",
                "profiles": { "adv": {
                    "denylist": ["fs__move_file"],
                    "asklist": ["fs__create_directory", "fs__edit_file"],
                    "elicitationFallback": "deny",
                    "rules": [
                        { "tools": ["fs__write_file"],
                          "whenPath": { "/path": [format!("{root_str}/protected"), format!("{root_str}/protected/**")] },
                          "disposition": "deny", "reason": "protected files" },
                        { "tools": ["fs__write_file"],
                          "whenPath": { "/path": [format!("{root_str}/canary.txt")] },
                          "disposition": "deny", "reason": "the canary" }
                    ]
                } }
            },
            "audit": { "dir": root.join("audit") }
        });
        let config = Config::from_json_str(&config.to_string()).expect("the fixture's config");
        let pool = UpstreamPool::connect(UpstreamSpec::of_config(&config))
            .await
            .expect("server-filesystem starts");
        let audit = Arc::new(AuditWriter::open(root.join("audit")).expect("audit dir"));
        let mut rc = RuntimeConfig::default();
        rc.max_concurrent_evals(4).cache_dir(None);
        let runtime = Runtime::new(&rc).expect("runtime");
        Fixture {
            root,
            runtime,
            pool,
            config,
            audit,
            asker: Arc::default(),
        }
    }

    pub fn options() -> EvalOptions {
        let mut o = EvalOptions::default();
        o.timeout(Some(std::time::Duration::from_secs(5)))
            .fuel(Some(2_000_000_000))
            .memory(32 << 20)
            .max_output(256 << 10)
            .max_tool_calls(Some(200));
        o
    }

    /// Runs `code` as a governed eval under the fixture's profile.
    pub async fn eval(&self, code: &str, options: EvalOptions) -> (String, EvalOutcome) {
        let profile = self.config.resolve_profile(None).expect("profile");
        let eval = GovernedEval::builder(self.runtime.clone())
            .tools(self.pool.clone())
            .caller(Caller::local())
            .profile(profile)
            .asker(self.asker.clone())
            .audit(Some(AuditTarget {
                sink: self.audit.clone(),
                include_args: false,
            }))
            .options(options)
            .build();
        let id = AuditRecord::eval_id(eval.id());
        let outcome = eval.run(code, &CancellationToken::new()).await;
        (id, outcome)
    }

    /// The audit records of one eval: (tool_call records, eval records).
    pub async fn audit_of(&self, eval_id: &str) -> (Vec<Value>, Vec<Value>) {
        let writer = self.audit.clone();
        tokio::task::spawn_blocking(move || writer.flush())
            .await
            .unwrap();
        let mut calls = Vec::new();
        let mut evals = Vec::new();
        for entry in std::fs::read_dir(self.root.join("audit")).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            for line in text.lines() {
                let record: Value = serde_json::from_str(line).expect("each audit line is JSON");
                if record["eval_id"] != eval_id {
                    continue;
                }
                match record["event"].as_str() {
                    Some("tool_call") => calls.push(record),
                    Some("eval") => evals.push(record),
                    other => panic!("unknown audit event {other:?}"),
                }
            }
        }
        (calls, evals)
    }

    /// Runs every case and returns one line per broken promise (empty: all held).
    pub async fn run_all(&self, cases: &[Case]) -> Vec<String> {
        let mut failures = Vec::new();
        for case in cases {
            let options = case.options.clone().unwrap_or_else(Self::options);
            let script = case
                .script
                .replace("$ROOT", &self.root.display().to_string());
            let (eval_id, outcome) = self.eval(&script, options).await;
            for problem in self.check(case, &eval_id, &outcome).await {
                failures.push(format!("{}: {problem}", case.name));
            }
        }
        failures
    }

    async fn check(&self, case: &Case, eval_id: &str, outcome: &EvalOutcome) -> Vec<String> {
        let mut problems = Vec::new();
        let shown = || serde_json::to_string(outcome).unwrap_or_default();
        // A classified outcome: `internal` is a bug in codemode, whatever the script did.
        if let Some(error) = &outcome.error
            && error.kind == ErrorKind::Internal
        {
            problems.push(format!("ended as internal: {}", shown()));
        }
        match &case.expect {
            Expect::Returns(want) if !outcome.ok || &outcome.result != want => {
                problems.push(format!("expected result {want}, got {}", shown()));
            }
            Expect::AnyResult if !outcome.ok => {
                problems.push(format!("expected a result, got {}", shown()));
            }
            Expect::Kind(kind) if outcome.error.as_ref().map(|e| e.kind) != Some(*kind) => {
                problems.push(format!("expected error kind {kind}, got {}", shown()));
            }
            _ => {}
        }
        // No denied tool ran: by the ledger, and by the upstream's own side effects.
        for call in &outcome.tool_calls {
            if call.status == CallStatus::Ok && case.must_not_run.contains(&call.tool.as_str()) {
                problems.push(format!("denied tool {} ran", call.tool));
            }
        }
        if let Some(found) = side_effects(&self.root) {
            problems.push(found);
        }
        // Audit exactly once: one eval record, one tool_call record per ledger entry.
        let (calls, evals) = self.audit_of(eval_id).await;
        let asked = self.asker.take();
        if let Some(check) = case.check {
            let probe = Probe {
                outcome,
                text: codemode_host::result_text(
                    outcome,
                    codemode_config::DEFAULT_RESULT_TEXT as usize,
                ),
                asked,
                audit_calls: &calls,
            };
            if let Err(why) = check(&probe) {
                problems.push(why);
            }
        }
        if evals.len() != 1 {
            problems.push(format!("{} eval records, want 1", evals.len()));
        }
        // A call the eval never started (it ended first) never reached the policy layer.
        let attempted = outcome
            .tool_calls
            .iter()
            .filter(|c| !c.reason.as_deref().unwrap_or("").starts_with("not started"))
            .count();
        if calls.len() != attempted {
            problems.push(format!(
                "{} tool_call records for {attempted} calls that started",
                calls.len()
            ));
        }
        // The host is alive: the next eval runs.
        let (_, next) = self.eval("return 1 + 1", Self::options()).await;
        if !next.ok || next.result != json!(2) {
            problems.push(format!(
                "the next eval failed: {}",
                serde_json::to_string(&next).unwrap_or_default()
            ));
        }
        problems
    }

    pub async fn shutdown(self) {
        self.pool.shutdown().await;
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A side effect no case may have: anything under `protected/`, a changed canary, a file
/// anywhere outside `public/` and `audit/` (an escape writing where it should not).
fn side_effects(root: &Path) -> Option<String> {
    let canary = std::fs::read_to_string(root.join("canary.txt")).unwrap_or_default();
    if canary != CANARY {
        return Some(format!("canary.txt changed to {canary:?}"));
    }
    let protected: Vec<_> = std::fs::read_dir(root.join("protected"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    if !protected.is_empty() {
        for p in &protected {
            let _ = std::fs::remove_file(p);
            let _ = std::fs::remove_dir_all(p);
        }
        return Some(format!("written under protected/: {protected:?}"));
    }
    let stray: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !["public", "protected", "audit", "canary.txt"].contains(&n.as_str()))
        .collect();
    if !stray.is_empty() {
        for n in &stray {
            let _ = std::fs::remove_file(root.join(n));
            let _ = std::fs::remove_dir_all(root.join(n));
        }
        return Some(format!("stray files in the root: {stray:?}"));
    }
    None
}

/// Runs `cases` on a fresh fixture in a runtime of its own; panics listing every failure.
pub fn run_table(area: &str, cases: Vec<Case>) {
    run_table_with(area, false, cases)
}

/// [`run_table`], with the misbehaving upstream `nasty` when `nasty`.
pub fn run_table_with(area: &str, nasty: bool, cases: Vec<Case>) {
    assert!(!cases.is_empty());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let failures = rt.block_on(async {
        let fixture = Fixture::start_with(area, nasty).await;
        let failures = fixture.run_all(&cases).await;
        fixture.shutdown().await;
        failures
    });
    assert!(
        failures.is_empty(),
        "{} of {} {area} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
