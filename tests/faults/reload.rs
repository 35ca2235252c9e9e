//! The config file replaced by garbage while evals run: hot reload refuses it, the old config
//! stays in force, and no eval fails.

use std::time::Duration;

use codemode_bench::http::{Load, Protocol, load};
use serde_json::json;

use crate::harness::World;

#[test]
fn garbage_config_during_load_is_refused_and_evals_go_on() {
    let world = World::start("garbage_config", |dir| {
        json!({
            "evaluation": {"profiles": {"kept": {"denylist": ["nothing__here"]}}},
            "audit": {"dir": dir.join("audit")}
        })
    });
    let url = world.server.url.clone();
    let generator = {
        let url = url.clone();
        std::thread::spawn(move || {
            load::run(&Load {
                url,
                tool: "codemode_eval_kept".into(),
                code: "return 1 + 1".into(),
                clients: 8,
                warmup: Duration::ZERO,
                duration: Duration::from_secs(3),
                protocol: Protocol::Stateless,
                threads: 2,
            })
        })
    };
    let refused = "keeping the running config";
    for garbage in [
        "{ this is not JSON",
        "{\"limits\": {\"timeout\": \"soon\"}}",
        "",
    ] {
        let before = world.server.log_lines_containing(refused);
        std::fs::write(&world.config, garbage).unwrap();
        world.await_log(refused, before + 1);
    }
    let run = generator.join().unwrap().unwrap();
    assert_eq!((run.errors, run.first_errors), (0, vec![]));
    assert!(run.measured > 0);
    // The profile of the old config still answers.
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let outcome = tokio
        .block_on(async {
            let mut client =
                codemode_bench::http::client::Client::connect(&url, Protocol::Legacy).await?;
            client
                .call_tool("codemode_eval_kept", json!({"code": "return 7"}))
                .await
        })
        .unwrap();
    assert_eq!(outcome["structuredContent"]["result"], 7);
}
