//! Media across a park: an eval that received an image, parked waiting for an approval and was
//! resumed in a new governed eval (as on another node) no longer holds that image; its result
//! naming it gets the note, while an image received after the resume is attached.

use crate::approvals::given::Given;
use std::collections::HashMap;
use std::sync::Arc;

use codemode_policies::{ApprovalAnswer, ApprovalDecision, Channel, Config};
use codemode_runtime::{BoxFuture, CancellationToken, EvalId, ParkRequest, Runtime, RuntimeConfig};
use codemode_test_support::peers;
use codemode_upstream::{UpstreamPool, UpstreamSpec};
use serde_json::json;

use super::*;
use crate::approvals::{Ask, Asker, Decided, OpenAsks, Reply};
use crate::server::result::{UNKNOWN_MEDIA, eval_result};
use crate::session::{GovernedEval, GovernedStep};

/// A human who has not decided yet.
struct Undecided;

impl Asker for Undecided {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> Channel {
        Channel::Elicitation
    }
    fn ask(&self, _ask: Ask) -> BoxFuture<'_, Reply> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn media_received_before_a_park_come_back_as_a_note() {
    peers::ensure_installed();
    let (program, args) = peers::everything_server_cmd();
    let mut specs = HashMap::new();
    specs.insert(
        "everything".to_string(),
        UpstreamSpec::stdio(program.display().to_string(), args),
    );
    let pool = UpstreamPool::connect(specs).await.unwrap();
    let config = Config::from_json_str(
        r#"{"evaluation": {"profiles": {"p": {"asklist": ["search_tools"]}}}}"#,
    )
    .unwrap();
    let profile = config.resolve_profile(Some("p")).unwrap();
    let mut runtime_config = RuntimeConfig::default();
    runtime_config.max_concurrent_evals(2);
    let runtime = Runtime::new(&runtime_config).unwrap();
    let decisions = Arc::new(Given::default());
    let governed = |park: Option<ParkRequest>, asks: Arc<OpenAsks>, id: Option<EvalId>| {
        let mut builder = GovernedEval::builder(runtime.clone())
            .tools(pool.clone())
            .profile(profile.clone())
            .asker(Arc::new(Undecided))
            .park(park)
            .open_asks(Some(asks));
        if let Some(id) = id {
            builder = builder.id(id);
        }
        builder.build()
    };
    let code = "const before = (await codemode['everything__get-tiny-image']({}))[1];\n\
                await codemode.search_tools({query: 'image'});\n\
                const after = (await codemode['everything__get-tiny-image']({}))[1];\n\
                return {before, after};";

    let park = ParkRequest::new();
    park.request();
    let asks = Arc::new(OpenAsks::new(Some(decisions.clone())));
    let first = governed(Some(park), asks.clone(), None);
    let GovernedStep::Parked(parked) = first.run_step(code, &CancellationToken::new()).await else {
        panic!("the eval should park at its approval");
    };
    // The tiny image's block as server-everything sends it (its JSON: base64 and fields).
    assert_eq!(first.media().used(), 5429);
    let loaded = codemode_runtime::Suspended::load(&parked.save()).unwrap();
    let approval = asks.snapshot()[0].id.clone();
    decisions.0.lock().unwrap().push((
        approval,
        Decided::Approval(ApprovalAnswer::new(
            ApprovalDecision::ApproveOnce,
            Channel::Http,
        )),
    ));
    let second = governed(
        None,
        Arc::new(OpenAsks::new(Some(decisions.clone()))),
        Some(first.id()),
    );
    let GovernedStep::Finished(outcome) = second
        .resume(code, &loaded, &CancellationToken::new())
        .await
        .unwrap()
    else {
        panic!("the resumed eval should finish");
    };
    assert!(outcome.ok, "{:?}", outcome.error);
    let before = outcome.result["before"]["id"].as_str().unwrap().to_string();
    let after = outcome.result["after"]["id"].as_str().unwrap().to_string();
    let finished = Finished::new(outcome, second.media());
    assert_eq!(finished.unknown_media, std::slice::from_ref(&before));
    let result = eval_result(&finished, 24 * 1024);
    assert_eq!(result.content.len(), 2);
    assert!(result.content[1].as_image().is_some());
    assert_eq!(
        result.structured_content.unwrap()["media"],
        json!([{"id": after, "type": "image", "content": 1},
               {"id": before, "note": UNKNOWN_MEDIA}])
    );
    pool.shutdown().await;
}
