//! A service whose scripts wait for slow answers (a human approving a payment) without holding
//! memory: a waiting script is parked, saved to a directory with the guest it runs in, and
//! resumed — here by a new `Runtime`, as after a restart or a deploy — once the answer comes.

use std::path::Path;

use codemode_runtime::{
    BoxFuture, CallContext, EvalControl, EvalOptions, EvalStep, GuestHash, ParkRequest, Runtime,
    RuntimeConfig, Suspended, ToolError, ToolHost,
};
use serde_json::{Value, json};

/// `approve` asks a human; the answer comes later, through the saved state, or — when the eval
/// is resumed without one — by looking the question up again with the note.
struct Approvals;

impl ToolHost for Approvals {
    fn call<'a>(
        &'a self,
        _name: &'a str,
        args: Value,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            if let Some(note) = cx.resumed_note() {
                // Made again after a resume with no answer: still undecided, wait again.
                let _wait = cx.awaiting_human(note.clone());
                return std::future::pending().await;
            }
            // A real service would post the question somewhere here, under this id.
            let ticket = format!("ticket-{}-{}", cx.eval_id, cx.call_id);
            let _wait = cx.awaiting_human(json!({ "ticket": ticket, "amount": args["amount"] }));
            std::future::pending().await
        })
    }

    fn tool_names(&self) -> Vec<String> {
        vec!["approve".into()]
    }
}

/// Saves a parked eval under `dir`, and the guest it needs, once, under `dir/guests`.
fn persist(dir: &Path, runtime: &Runtime, parked: &Suspended) -> std::io::Result<()> {
    let guests = dir.join("guests");
    std::fs::create_dir_all(&guests)?;
    let guest = guests.join(format!("{}.wasm", parked.guest_hash()));
    if !guest.exists() {
        std::fs::write(&guest, runtime.guest_wasm())?;
    }
    // Write then rename: a crash never leaves half a state behind.
    let path = dir.join(format!("{}.eval", parked.eval_id()));
    std::fs::write(path.with_extension("tmp"), parked.save())?;
    std::fs::rename(path.with_extension("tmp"), path)
}

/// Loads every saved eval under `dir`, giving `runtime` the guests they name.
fn reload(dir: &Path, runtime: &Runtime) -> Result<Vec<Suspended>, Box<dyn std::error::Error>> {
    let mut evals = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "eval") {
            let parked = Suspended::load(&std::fs::read(&path)?)?;
            let guest: GuestHash = parked.guest_hash();
            if !runtime.guests().contains(&guest) {
                runtime.add_guest(&std::fs::read(
                    dir.join("guests").join(format!("{guest}.wasm")),
                )?)?;
            }
            // Resume each saved eval once: it leaves the store as it is taken.
            std::fs::remove_file(&path)?;
            evals.push(parked);
        }
    }
    Ok(evals)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("codemode-durable-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let code = "const total = [120, 80].reduce((a, b) => a + b, 0);\n\
                console.log('asking for', total);\n\
                const ok = await codemode.approve({ amount: total });\n\
                ok ? `paid ${total}` : 'refused'";

    // The first process: the script runs until it waits for the human, then parks.
    let first = Runtime::new(&RuntimeConfig::default())?;
    let park = ParkRequest::new();
    park.request(); // park as soon as every call waits for a human (a service may wait first)
    let mut control = EvalControl::new();
    control.park(park);
    let id = first.allocate_eval_id();
    let step = first
        .eval_parkable(id, code, &EvalOptions::default(), &Approvals, &control)
        .await;
    let EvalStep::Suspended(parked) = step else {
        panic!("the script waits for a human, so it parks");
    };
    assert_eq!(
        parked.pending()[0].note,
        Some(json!({"ticket": "ticket-1-1", "amount": 200}))
    );
    persist(&dir, &first, &parked)?;
    drop(first); // a restart, or a deploy

    // Later, a new process: the human approved ticket-1-1.
    let second = Runtime::new(&RuntimeConfig::default())?;
    for parked in reload(&dir, &second)? {
        let call = parked.pending()[0].call_id;
        let step = second
            .resume(&parked, vec![(call, Ok(json!(true)))], &Approvals, &control)
            .await?;
        let EvalStep::Finished(outcome) = step else {
            panic!("answered, the script finishes");
        };
        assert!(outcome.ok, "{:?}", outcome.error);
        assert_eq!(outcome.result, json!("paid 200"));
        assert_eq!(outcome.logs[0].message, "asking for 200");
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
