//! Media across a park: an eval that received an image, parked waiting for an approval and was
//! resumed in a new governed eval (as on another node) with the media saved with it, still
//! attaches that image, and one received after the resume.

use crate::approvals::given::Given;
use std::collections::HashMap;
use std::sync::Arc;

use codemode_policies::{ApprovalAnswer, ApprovalDecision, Channel, Config};
use codemode_runtime::{BoxFuture, CancellationToken, EvalId, ParkRequest, Runtime, RuntimeConfig};
use codemode_test_support::peers;
use codemode_upstream::{KeptMedia, Media, UpstreamPool, UpstreamSpec};
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
/// Media a parked eval's calls received are saved with it and attached by its result after the
/// resume; past the resumed eval's budget (lowered since), a reference to one gets a note.
async fn media_received_before_a_park_are_attached_after_the_resume() {
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
    // The resumed eval: its id, the media saved with it, and its budget.
    type Resumed = (EvalId, Vec<KeptMedia>, u64);
    let governed = |park: Option<ParkRequest>, asks: Arc<OpenAsks>, resumed: Option<Resumed>| {
        let mut builder = GovernedEval::builder(runtime.clone())
            .tools(pool.clone())
            .profile(profile.clone())
            .asker(Arc::new(Undecided))
            .park(park)
            .open_asks(Some(asks));
        if let Some((id, media, budget)) = resumed {
            builder = builder.id(id).max_media_bytes(budget).media(media);
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
        approval.clone(),
        Decided::Approval(ApprovalAnswer::new(
            ApprovalDecision::ApproveOnce,
            Channel::Http,
        )),
    ));
    // Resumed with the media saved, within the default budget: both images attached.
    // Through JSON, as the parked eval's record holds them.
    let saved: Vec<KeptMedia> =
        serde_json::from_slice(&serde_json::to_vec(&first.media().saved()).unwrap()).unwrap();
    assert_eq!(saved.len(), 1);
    let resume = |budget: u64| {
        let second = governed(
            None,
            Arc::new(OpenAsks::new(Some(decisions.clone()))),
            Some((first.id(), saved.clone(), budget)),
        );
        let loaded = &loaded;
        async move {
            let GovernedStep::Finished(outcome) = second
                .resume(code, loaded, &CancellationToken::new())
                .await
                .unwrap()
            else {
                panic!("the resumed eval should finish");
            };
            assert!(outcome.ok, "{:?}", outcome.error);
            let values = outcome.result.clone();
            (Finished::new(outcome, second.media()), values)
        }
    };
    let id = |value: &serde_json::Value| value["id"].as_str().unwrap_or_default().to_string();
    let (finished, values) = resume(Media::DEFAULT_MAX_BYTES).await;
    let (before, after) = (id(&values["before"]), id(&values["after"]));
    assert_eq!(before, saved[0].id);
    assert!(
        finished.unknown_media.is_empty(),
        "{:?}",
        finished.unknown_media
    );
    let result = eval_result(&finished, 24 * 1024);
    assert_eq!(result.content.len(), 3);
    assert_eq!(
        result.structured_content.unwrap()["media"],
        // In the order the result names them (its keys in order: `after`, `before`).
        json!([{"id": after, "type": "image", "content": 1},
               {"id": before, "type": "image", "content": 2}])
    );
    // Resumed under a budget the image does not fit (the config lowered it meanwhile): the
    // saved one is left out, and its reference told so (the new one is dropped at once).
    decisions.0.lock().unwrap().push((
        approval.clone(),
        Decided::Approval(ApprovalAnswer::new(
            ApprovalDecision::ApproveOnce,
            Channel::Http,
        )),
    ));
    let (finished, values) = resume(5000).await;
    assert_eq!(id(&values["before"]), before);
    assert_eq!(
        values["after"]["omitted"],
        "image of 5429 bytes from `everything` is over limits.maxMediaBytes (5000 bytes) of this eval, 0 of which are used: it was dropped"
    );
    assert_eq!(finished.unknown_media, std::slice::from_ref(&before));
    let result = eval_result(&finished, 24 * 1024);
    assert_eq!(result.content.len(), 1);
    assert_eq!(
        result.structured_content.unwrap()["media"],
        json!([{"id": before, "note": UNKNOWN_MEDIA}])
    );
    pool.shutdown().await;
}
