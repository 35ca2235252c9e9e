//! A deploy that changes the guest loses no parked eval: each saved eval names its guest, and a
//! runtime given that guest ([`Runtime::add_guest`]) resumes the eval in it.
//!
//! The second guest is the committed one with QuickJS's "not a function" message changed in its
//! read-only data (same length, so the module stays valid). Those bytes lie in pages no script
//! writes, so a saved eval never carries them: after a resume the script reads its own guest's
//! message only if the runtime really instantiated that guest.

use codemode_runtime::{EvalControl, EvalStep, GuestHash, ResumeError, Runtime, RuntimeConfig};
use serde_json::json;

use crate::durable::{Desk, Tools, parking, through_bytes};
use crate::{ok, opts, show};

/// The committed guest with every "not a function" in its data changed.
fn changed_guest() -> Vec<u8> {
    codemode_test_support::changed_guest(Runtime::GUEST_WASM)
}

fn runtime(wasm: &[u8]) -> Runtime {
    let mut config = RuntimeConfig::default();
    config.max_concurrent_evals(4);
    Runtime::with_guest(&config, wasm).expect("building a runtime")
}

/// The message of calling `undefined`, before and after a call that parks.
const SCRIPT: &str = "const message = () => { try { (void 0)(); } catch (e) { return e.message; } };\nconst before = message();\nawait codemode.ask({q: 'a'});\n[before, message()]";

async fn park_in(runtime: &Runtime, tools: &Tools) -> codemode_runtime::Suspended {
    let step = runtime
        .eval_parkable(
            runtime.allocate_eval_id(),
            SCRIPT,
            &opts(),
            tools,
            &parking(),
        )
        .await;
    match step {
        EvalStep::Suspended(suspended) => through_bytes(&suspended),
        EvalStep::Finished(outcome) => panic!("finished: {}", show(&outcome)),
    }
}

async fn resume_in(
    runtime: &Runtime,
    suspended: &codemode_runtime::Suspended,
    tools: &Tools,
) -> Result<serde_json::Value, ResumeError> {
    let step = runtime
        .resume(
            suspended,
            vec![(1, Ok(json!("A")))],
            tools,
            &EvalControl::new(),
        )
        .await?;
    let outcome = step.finished().expect("finishes");
    Ok(ok(&outcome).clone())
}

#[tokio::test]
async fn each_saved_eval_resumes_in_the_guest_it_was_saved_with() {
    let changed = changed_guest();
    let old = runtime(&changed);
    let new = runtime(Runtime::GUEST_WASM);
    let tools = Tools::new(Desk::Human);
    assert_eq!(old.guest_hash(), GuestHash::of(&changed));
    assert_eq!(new.guest_hash(), GuestHash::of(Runtime::GUEST_WASM));

    // Saved by the old deploy; the new one does not have its guest yet.
    let saved_old = park_in(&old, &tools).await;
    assert_eq!(saved_old.guest_hash(), old.guest_hash());
    let refused = resume_in(&new, &saved_old, &tools).await.unwrap_err();
    assert_eq!(
        refused,
        ResumeError::UnknownGuest {
            guest: old.guest_hash()
        }
    );

    // The embedder kept the old guest's bytes beside its saved evals.
    assert_eq!(new.add_guest(&old.guest_wasm()).unwrap(), old.guest_hash());
    assert_eq!(new.guests(), vec![new.guest_hash(), old.guest_hash()]);
    let changed_message = "NOT A FUNCTION";
    let result = resume_in(&new, &saved_old, &tools).await.unwrap();
    let messages = result.as_array().unwrap();
    assert!(
        messages
            .iter()
            .all(|m| m.as_str().unwrap().contains(changed_message)),
        "{result}"
    );
    assert_eq!(messages[0], messages[1]);

    // New evals run in the new guest, and park and resume in it.
    let saved_new = park_in(&new, &tools).await;
    assert_eq!(saved_new.guest_hash(), new.guest_hash());
    let result = resume_in(&new, &saved_new, &tools).await.unwrap();
    let messages = result.as_array().unwrap();
    assert!(
        messages.iter().all(|m| {
            let m = m.as_str().unwrap();
            m.contains("not a function") && !m.contains(changed_message)
        }),
        "{result}"
    );
    assert_eq!(messages[0], messages[1]);

    // And the other way round: the old runtime given the new guest.
    old.add_guest(Runtime::GUEST_WASM).unwrap();
    let result = resume_in(&old, &saved_new, &tools).await.unwrap();
    assert_eq!(result.as_array().unwrap()[1], messages[1]);
}
