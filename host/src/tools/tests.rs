use std::sync::Arc;
use std::time::Duration;

use codemode_runtime::{CallStatus, CancellationToken, EvalOptions, Runtime, RuntimeConfig};
use serde_json::json;

use crate::approvals::NoAsker;
use crate::session::GovernedEval;
use codemode_upstream::UpstreamPool;

fn runtime() -> Runtime {
    let mut config = RuntimeConfig::default();
    config.max_concurrent_evals(2);
    Runtime::new(&config).expect("runtime")
}

/// Red team (issue 17): six `search_tools({query: "echo ".repeat(1.5e6)})` calls ran 37 s in an
/// eval reporting "exceeded 3s": the ranking ran on the executor, where no deadline could stop
/// it. A query past [`super::MAX_QUERY_BYTES`] is refused at once, catchably, naming the cap; the
/// eval runs to its end.
#[tokio::test]
async fn a_huge_search_tools_query_is_refused_at_once_naming_the_cap() {
    let mut options = EvalOptions::default();
    options.timeout(Some(Duration::from_secs(3)));
    let eval = GovernedEval::builder(runtime())
        .tools(UpstreamPool::new())
        .asker(Arc::new(NoAsker))
        .options(options)
        .build();
    let code = r#"const out = [];
        for (let i = 0; i < 6; i++) {
          try { await codemode.search_tools({query: "echo ".repeat(1.5e6)}); out.push("ran"); }
          catch (e) { out.push(e.name + ": " + e.message); }
        }
        const ok = await codemode.search_tools({query: "x".repeat(1000)});
        return [out, Array.isArray(ok.results)];"#;
    let outcome = eval.run(code, &CancellationToken::new()).await;
    assert!(outcome.ok, "{:?}", outcome.error);
    let refused = "ToolError: `query` is 7500000 bytes long; search_tools takes at most 1000 (a few keywords)";
    assert_eq!(outcome.result, json!([vec![refused; 6], true]));
    let statuses: Vec<CallStatus> = outcome.tool_calls.iter().map(|c| c.status).collect();
    assert_eq!(statuses[..6], [CallStatus::Error; 6]);
    assert_eq!(statuses[6], CallStatus::Ok);
}

/// `get_tools` caps its input the same way: how many names, and how long each may be.
#[tokio::test]
async fn get_tools_refuses_too_many_or_too_long_names() {
    let eval = GovernedEval::builder(runtime())
        .tools(UpstreamPool::new())
        .build();
    let code = r#"const tryIt = async (names) => {
          try { await codemode.get_tools({names}); return "ran"; } catch (e) { return e.message; }
        };
        return [await tryIt(Array.from({length: 101}, (_, i) => "t" + i)),
                await tryIt(["a".repeat(257)]),
                await tryIt(["search_tools", "a".repeat(256)])];"#;
    let outcome = eval.run(code, &CancellationToken::new()).await;
    assert!(outcome.ok, "{:?}", outcome.error);
    assert_eq!(
        outcome.result,
        json!([
            "`names` has 101 entries; get_tools takes at most 100 per call",
            "a name in `names` is 257 bytes long; tool names are at most 256",
            "ran"
        ])
    );
}

/// A human who never answers.
struct Silent;

impl crate::approvals::Asker for Silent {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> codemode_policies::Channel {
        codemode_policies::Channel::Elicitation
    }
    fn ask(
        &self,
        ask: crate::approvals::Ask,
    ) -> codemode_runtime::BoxFuture<'_, crate::approvals::Reply> {
        Box::pin(async move {
            tokio::time::sleep(ask.timeout).await;
            crate::approvals::Reply::new(crate::approvals::Answer::Timeout, self.channel())
        })
    }
}

/// Red team (issue 17): time waiting for a human does not count against the eval's timeout, so
/// an eval asking one question after another outlived it by about max-tool-calls × approval
/// timeout (15 asks → 15 s against a 10 s timeout). The lifetime counts that time too: the eval
/// is stopped during its first unanswered question, with error kind `timeout` naming the
/// lifetime, and the ledger shows the one question asked.
#[tokio::test]
async fn human_waits_end_at_the_eval_lifetime_as_a_timeout() {
    let mut options = EvalOptions::default();
    options.timeout(Some(Duration::from_secs(10)));
    let eval = GovernedEval::builder(runtime())
        .tools(UpstreamPool::new())
        .asker(Arc::new(Silent))
        .options(options)
        .lifetime(Some(Duration::from_millis(300)))
        .build();
    let code = r#"for (let i = 0; i < 15; i++) {
          await codemode.hitl_request({question: "go?", options: ["yes", "no"], timeoutMs: 1000});
        }
        return "outlived";"#;
    let outcome = eval.run(code, &CancellationToken::new()).await;
    let error = outcome.error.expect("stopped by its lifetime");
    assert_eq!(error.kind, codemode_runtime::ErrorKind::Timeout);
    assert_eq!(
        error.message,
        "the eval exceeded its lifetime of 300ms (limits.maxEvalLifetime), which counts time spent waiting for a human"
    );
    assert_eq!(outcome.tool_calls.len(), 1);
}

/// Red team: a server behind tools the profile denies stays unknown in `get_tools` (no state,
/// no down reason), and a name holding a backtick cannot close its quote in the text.
#[test]
fn get_tools_text_hides_denied_servers_and_quotes_names() {
    let config = codemode_policies::Config::from_json_str(
        &json!({"evaluation": {"profiles": {"ro": {"allowlist": ["files__*"]}}}}).to_string(),
    )
    .unwrap();
    let ro = config.profile("ro").unwrap();
    assert!(super::may_see(Some(ro), "files__read"));
    assert!(!super::may_see(Some(ro), "secret__x"));
    assert!(super::may_see(None, "secret__x"));

    let text = super::get_tools_text(&json!({
        "declarations": "declare const codemode: {\n};\n",
        "missing": [
            {"name": "x` ok `y", "did_you_mean": []},
            {"name": "files__read", "did_you_mean": [],
             "server_state": {"server": "files", "state": "down", "error": "gone `now`"}},
        ],
    }));
    assert_eq!(
        text,
        "declare const codemode: {\n};\n\n\
         // unknown tool `x\\` ok \\`y`; search_tools({query}) finds tools by keywords\n\
         // `files__read` is not listed: the server `files` is down: gone `now`"
    );
}

/// A server is named to a profile that may see one of its tools as last listed, or — none
/// known yet — that does not deny the server's tools as a whole.
#[test]
fn a_server_is_named_only_to_profiles_that_may_see_a_tool_of_it() {
    let config = codemode_policies::Config::from_json_str(
        &json!({"evaluation": {"profiles": {
            "ro": {"allowlist": ["files__read"]},
            "nosecret": {"denylist": ["secret__*"]},
        }}})
        .to_string(),
    )
    .unwrap();
    let (ro, nosecret) = (config.profile("ro"), config.profile("nosecret"));
    let known = [
        "files__read".to_string(),
        "files__write".to_string(),
        "secret__get".to_string(),
    ];
    let sees = |p: Option<&std::sync::Arc<codemode_policies::Profile>>, server: &str| {
        super::may_see_server(p.map(|p| &**p), server, &known)
    };
    assert_eq!(
        [
            sees(ro, "files"),
            sees(ro, "secret"),
            sees(ro, "fresh"),
            sees(nosecret, "files"),
            sees(nosecret, "secret"),
            sees(nosecret, "fresh"),
            sees(None, "secret"),
        ],
        [true, false, false, true, false, true, true]
    );
}
