//! One eval's records through its life in a real local store, with a real parked sandbox: its
//! `owner:` record stands for it while it is parked, running and finished, existence is looked
//! up without opening the saved eval, and ownership cannot be moved between tokens.

use std::path::Path;

use codemode_runtime::{
    BoxFuture, CallContext, EvalControl, EvalOutcome, EvalStep, RuntimeConfig, ToolError, ToolHost,
};
use serde_json::json;

use super::lease::Running;
use super::*;
use codemode_store::{LocalStore, StateKey, StoreErrorKind};

const MINUTE: Duration = Duration::from_secs(60);

/// A tool whose every call waits for a human who never answers: the eval parks in it.
struct Human;

impl ToolHost for Human {
    fn call<'a>(
        &'a self,
        _name: &'a str,
        _args: Value,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let _wait = cx.awaiting_human(json!({"approval": cx.call_id}));
            std::future::pending().await
        })
    }

    fn tool_names(&self) -> Vec<String> {
        vec!["ask".into()]
    }
}

/// A sandbox parked in its call to `ask`, after building a large array (a saved state of
/// tens of KiB, as a typical parked eval's).
async fn parked(runtime: &Runtime) -> Suspended {
    let park = ParkRequest::new();
    park.request();
    let mut control = EvalControl::new();
    control.park(park);
    let code = "const a = Array.from({length: 10000}, (_, i) => ({i, s: 'x' + i}));\n\
                return a.length + await codemode.ask({});";
    let id = runtime.allocate_eval_id();
    match runtime
        .eval_parkable(id, code, &Default::default(), &Human, &control)
        .await
    {
        EvalStep::Suspended(suspended) => suspended,
        EvalStep::Finished(outcome) => panic!("the eval finished: {:?}", outcome.error),
    }
}

fn meta(token: &str) -> ParkedMeta {
    ParkedMeta {
        token: token.into(),
        tool: "eval".into(),
        code: "return await codemode.ask({})".into(),
        caller: "alice".into(),
        permissions: Vec::new(),
        profile: None,
        eval_id: 1,
        audit_id: "1".into(),
        asks: Vec::new(),
        client: "alice".into(),
        session_id: None,
        eval_approvals: SessionApprovals::new(),
        session_approvals: SessionApprovals::new(),
        lived_ms: 0,
        trace: None,
        media: Vec::new(),
    }
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn the_owner_record_stands_for_the_eval_from_park_to_result() {
    let dir = codemode_test_support::scratch_dir("durable-owner", "life");
    let store = Store::local(
        LocalStore::open(&dir, false).unwrap(),
        &StateKey::from_bytes([3; 32]),
    );
    let durable = Arc::new(Durable::new(store, Duration::ZERO));
    let runtime = Runtime::new(&RuntimeConfig::default()).expect("runtime");
    let alice = Owner::new("eval", "alice");

    // Unknown to the store.
    assert_eq!(durable.owner("t1").await.unwrap(), None);
    assert!(!durable.knows("t1").await.unwrap());
    assert!(!durable.is_parked("t1").await.unwrap());

    // Parked: its owner record is small, its saved state is not.
    let suspended = parked(&runtime).await;
    durable.save(&meta("t1"), &suspended).await.unwrap();
    assert_eq!(file_names(&dir), ["eval:t1", "owner:t1"]);
    let size = |name: &str| std::fs::metadata(dir.join(name)).unwrap().len();
    assert!(size("owner:t1") < 200, "{}", size("owner:t1"));
    assert!(size("eval:t1") > 8 * 1024, "{}", size("eval:t1"));
    assert_eq!(durable.owner("t1").await.unwrap(), Some(alice.clone()));
    assert!(durable.knows("t1").await.unwrap());
    assert!(durable.is_parked("t1").await.unwrap());

    // A store writer cannot give another token this owner: the record is sealed under its
    // key name, so a copy does not open, and the token is not known as anyone's.
    std::fs::copy(dir.join("owner:t1"), dir.join("owner:t2")).unwrap();
    let e = durable.owner("t2").await.unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::Unreadable);
    assert_eq!(
        durable.knows("t2").await.unwrap_err().kind(),
        StoreErrorKind::Unreadable
    );
    std::fs::remove_file(dir.join("owner:t2")).unwrap();

    // Claimed: no longer parked, still known and owned while it runs.
    let claimed = durable
        .claim(&runtime, "t1", MINUTE)
        .await
        .unwrap()
        .expect("parked");
    assert_eq!(claimed.meta.owner(), alice);
    assert!(!durable.is_parked("t1").await.unwrap());
    assert!(
        durable
            .claim(&runtime, "t1", MINUTE)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(durable.running("t1").await, Running::Yes);
    assert_eq!(durable.owner("t1").await.unwrap(), Some(alice.clone()));
    assert_eq!(file_names(&dir), ["owner:t1", "running:t1"]);

    // Finished: its result is kept for its owner alone, and the owner record with it.
    let outcome = EvalOutcome {
        ok: true,
        result: json!(10_001),
        error: None,
        warnings: Vec::new(),
        logs: Vec::new(),
        tool_calls: Vec::new(),
        stats: Default::default(),
    };
    // With a media block its result refers to: the block is in the record too.
    let finished = Finished {
        outcome,
        media: vec![codemode_upstream::Attachment {
            id: "0123456789abcdef0123456789abcdef".into(),
            block: rmcp::model::ContentBlock::image("AAAA", "image/png"),
        }],
        unknown_media: vec!["fedcba9876543210fedcba9876543210".into()],
    };
    durable.put_result("t1", &alice, &finished).await;
    let read = durable.result("t1", ("eval", "alice")).await.unwrap();
    assert_eq!(read.as_ref(), Some(&finished));
    durable.unmark_running("t1").await;
    assert_eq!(durable.running("t1").await, Running::No);
    assert!(durable.knows("t1").await.unwrap());
    let got = |asking| {
        let durable = durable.clone();
        async move {
            durable
                .result("t1", asking)
                .await
                .unwrap()
                .map(|o| o.outcome.result)
        }
    };
    assert_eq!(got(("eval", "alice")).await, Some(json!(10_001)));
    assert_eq!(got(("eval", "bob")).await, None);
    assert_eq!(got(("codemode_eval_ro", "alice")).await, None);

    // A legacy request took the result: nothing of the eval is left.
    durable.forget_result("t1").await;
    assert!(!durable.knows("t1").await.unwrap());
    assert_eq!(file_names(&dir), Vec::<String>::new());
}

#[tokio::test]
async fn a_saved_eval_that_does_not_open_leaves_no_owner_behind() {
    let dir = codemode_test_support::scratch_dir("durable-owner", "unopenable");
    let key = StateKey::from_bytes([4; 32]);
    let store = Store::local(LocalStore::open(&dir, false).unwrap(), &key);
    let durable = Arc::new(Durable::new(store.clone(), Duration::ZERO));
    let runtime = Runtime::new(&RuntimeConfig::default()).expect("runtime");
    durable
        .put_owner("t3", &Owner::new("eval", "alice"), MINUTE)
        .await
        .unwrap();
    // Sealed properly, but not a parked eval's record.
    store
        .put("eval:t3", b"not a saved eval", MINUTE)
        .await
        .unwrap();
    assert!(durable.is_parked("t3").await.unwrap());
    let e = durable.claim(&runtime, "t3", MINUTE).await.err().unwrap();
    assert_eq!(e, "a parked eval's record is truncated");
    assert_eq!(file_names(&dir), Vec::<String>::new());
    assert!(!durable.knows("t3").await.unwrap());
}

/// Makes the local store's write of `eval:<token>` fail (a directory stands where its file
/// would be renamed to), and nothing else.
fn block_eval_record(dir: &Path, token: &str) {
    std::fs::create_dir_all(dir.join(format!("eval:{token}")).join("blocked")).unwrap();
}

/// The records in `dir` (the directory blocking an eval record left out).
fn record_names(dir: &Path) -> Vec<String> {
    file_names(dir)
        .into_iter()
        .filter(|n| dir.join(n).is_file())
        .collect()
}

#[tokio::test]
async fn an_eval_that_cannot_be_saved_leaves_no_ask_or_owner_behind() {
    let dir = codemode_test_support::scratch_dir("durable-owner", "unsaved");
    let store = Store::local(
        LocalStore::open(&dir, false).unwrap(),
        &StateKey::from_bytes([5; 32]),
    );
    let durable = Arc::new(Durable::new(store, Duration::ZERO));
    let runtime = Runtime::new(&RuntimeConfig::default()).expect("runtime");
    let suspended = parked(&runtime).await;
    let mut meta = meta("t5");
    meta.asks = vec![SavedAsk {
        id: "a5".into(),
        view: json!({"id": "a5"}),
        message: "Approve?".into(),
        schema: Default::default(),
    }];
    block_eval_record(&dir, "t5");
    assert!(durable.save(&meta, &suspended).await.is_err());
    // The eval goes on in memory, reading no decision from the store: an ask left listed
    // could be decided on another node for nothing, and an owner record would tell a retry
    // there that the store holds the eval.
    assert_eq!(record_names(&dir), Vec::<String>::new());
    assert_eq!(durable.owner("t5").await.unwrap(), None);
    assert!(durable.parked_asks().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_resumed_eval_that_cannot_be_saved_again_keeps_its_owner_for_its_run() {
    let dir = codemode_test_support::scratch_dir("durable-owner", "resaved");
    let store = Store::local(
        LocalStore::open(&dir, false).unwrap(),
        &StateKey::from_bytes([6; 32]),
    );
    let durable = Arc::new(Durable::new(store.clone(), Duration::ZERO));
    let runtime = Runtime::new(&RuntimeConfig::default()).expect("runtime");
    durable
        .save(&meta("t6"), &parked(&runtime).await)
        .await
        .unwrap();
    let run = 10 * MINUTE;
    let claimed = durable
        .claim(&runtime, "t6", run)
        .await
        .unwrap()
        .expect("parked");
    // It parks again here, and this save fails: it runs on in memory, so its owner record must
    // last as long as the run, not the parked time (its first ask's deadline plus the grace).
    block_eval_record(&dir, "t6");
    assert!(
        durable
            .save(&claimed.meta, &parked(&runtime).await)
            .await
            .is_err()
    );
    assert_eq!(
        durable.owner("t6").await.unwrap(),
        Some(Owner::new("eval", "alice"))
    );
    let left = store.get("owner:t6").await.unwrap().unwrap().remaining();
    assert!(left > run - MINUTE, "{left:?}");
}
