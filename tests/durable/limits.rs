//! The per-client limits across parks: `limits.perClient.maxParkedEvals` (counted per node)
//! keeps a client's evals beyond it in memory, where they count against `maxSuspendedEvals`.

use serde_json::json;

use crate::client::{self, approve_all, block_on, input_keys, request_state};
use crate::flow::{GATE, prepare, script};
use crate::harness::{Node, await_local_parked, await_some, node_config, write_json};

/// One client (all requests from 127.0.0.1) may park one eval and keep one waiting in memory:
/// its first eval parks, its second stays in memory (the log says why), its third is refused
/// by `maxSuspendedEvals`. Once the parked one is answered and resumed, the one in memory parks.
#[test]
fn evals_over_the_parked_cap_stay_in_memory_and_count_as_suspended() {
    let dir = codemode_test_support::scratch_dir("durable", "parked_cap");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    prepare(&files);
    let state = dir.join("state");
    let config = dir.join("codemode.json");
    let durable = json!({"store": "local", "dir": state, "suspendToStoreAfterSeconds": 0});
    let mut value = node_config(&files, &dir.join("audit"), durable);
    value["limits"] = json!({"perClient": {"maxSuspendedEvals": 1, "maxParkedEvals": 1}});
    write_json(&config, &value);
    let node = Node::start("parked_cap", &config, &[]);
    let records = state.join("records");
    let args = json!({"code": script(&files)});
    let call = || block_on(client::call_tool(&node.mcp_url(), GATE, &args, None)).unwrap();

    let first = call().result;
    assert_eq!(input_keys(&first).len(), 1, "{first}");
    let parked = await_local_parked(&records, 1, &node.log());
    assert!(
        parked.contains(&format!("eval:{}", request_state(&first))),
        "{parked:?}"
    );

    let second = call().result;
    assert_eq!(input_keys(&second).len(), 1, "{second}");
    await_some("the log says the second eval stays in memory", || {
        node.log()
            .contains(
                "an eval of client `address:127.0.0.1` stays in memory instead of being parked: \
                 the client has 1 evals parked from this node (limits.perClient.maxParkedEvals = 1)",
            )
            .then_some(())
    });
    await_local_parked(&records, 1, &node.log());

    let third = call().result;
    assert_eq!(
        third,
        json!({"content": [{"type": "text", "text": "eval refused: client `address:127.0.0.1` already has 1 evals waiting for a human (limits.perClient.maxSuspendedEvals = 1); answer or cancel one first"}],
               "isError": true, "resultType": "complete"})
    );

    // The parked eval answered and resumed: the one in memory parks in its place.
    let done = block_on(client::call_tool(
        &node.mcp_url(),
        GATE,
        &args,
        Some((&request_state(&first), approve_all(&first))),
    ))
    .unwrap()
    .result;
    assert_eq!(done["structuredContent"]["ok"], true, "{done}");
    await_some("the second eval parks", || {
        let names = await_local_parked(&records, 1, &node.log());
        names
            .contains(&format!("eval:{}", request_state(&second)))
            .then_some(())
    });
}

/// Found by the red team: one eval parked at 22 MiB, and the count caps let a client park 256 of
/// them per node. Parked state is capped in bytes, per client (`limits.perClient.maxParkedBytes`)
/// and per node (`durable.maxParkedBytes`): an eval whose record would pass either is not saved
/// (the log names the cap and the bytes), goes on in memory, and the client's retry answers it.
#[test]
fn evals_over_a_parked_bytes_cap_go_on_in_memory() {
    let cases = [
        (
            "parked_bytes_client",
            json!({"limits": {"perClient": {"maxParkedBytes": "1KiB"}}}),
            "parking it would pass limits.perClient.maxParkedBytes (1024 bytes): client `address:127.0.0.1` has 0 bytes parked from this node and this eval is ",
        ),
        (
            "parked_bytes_node",
            json!({"durable": {"maxParkedBytes": "2KiB"}}),
            "parking it would pass durable.maxParkedBytes (2048 bytes): this node has 0 bytes parked and this eval is ",
        ),
    ];
    for (name, edit, refusal) in cases {
        let dir = codemode_test_support::scratch_dir("durable", name);
        let files = dir.join("files");
        std::fs::create_dir_all(&files).unwrap();
        prepare(&files);
        let state = dir.join("state");
        let config = dir.join("codemode.json");
        let mut durable = json!({"store": "local", "dir": state, "suspendToStoreAfterSeconds": 0});
        if let Some(extra) = edit.get("durable").and_then(|d| d.as_object()) {
            for (k, v) in extra {
                durable[k] = v.clone();
            }
        }
        let mut value = node_config(&files, &dir.join("audit"), durable);
        if let Some(limits) = edit.get("limits") {
            value["limits"] = limits.clone();
        }
        write_json(&config, &value);
        let node = Node::start(name, &config, &[]);
        let args = json!({"code": script(&files)});
        let asked = block_on(client::call_tool(&node.mcp_url(), GATE, &args, None))
            .unwrap()
            .result;
        assert_eq!(input_keys(&asked).len(), 1, "{asked}");
        await_some("the log names the cap", || {
            node.log().contains(refusal).then_some(())
        });
        let records = state.join("records");
        let saved = std::fs::read_dir(&records)
            .map(|d| {
                d.filter_map(Result::ok)
                    .any(|e| e.file_name().to_string_lossy().starts_with("eval:"))
            })
            .unwrap_or(false);
        assert!(!saved, "{name}: the eval was saved");
        let done = block_on(client::call_tool(
            &node.mcp_url(),
            GATE,
            &args,
            Some((&request_state(&asked), approve_all(&asked))),
        ))
        .unwrap()
        .result;
        assert_eq!(done["structuredContent"]["ok"], true, "{name}: {done}");
    }
}

/// `limits.maxEvalLifetime` counts an eval's time in memory across parks: an eval with a 4 s
/// lifetime waits 3 s in memory and parks; the client's retries (without an answer) resume it,
/// and it ends with kind `timeout` naming the 4 s once its time in memory adds up to it. Were
/// the lifetime counted from each resume, the eval would park again 3 s into each resume and
/// never time out (until its approval time, 10 minutes).
#[test]
fn the_lifetime_counts_time_in_memory_across_parks() {
    let dir = codemode_test_support::scratch_dir("durable", "lifetime_parks");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    prepare(&files);
    let state = dir.join("state");
    let config = dir.join("codemode.json");
    let durable = json!({"store": "local", "dir": state, "suspendToStoreAfterSeconds": 3});
    let mut value = node_config(&files, &dir.join("audit"), durable);
    value["limits"] = json!({"maxEvalLifetime": "4s"});
    write_json(&config, &value);
    let node = Node::start("lifetime_parks", &config, &[]);
    let args = json!({"code": script(&files)});
    let asked = block_on(client::call_tool(&node.mcp_url(), GATE, &args, None))
        .unwrap()
        .result;
    assert_eq!(input_keys(&asked).len(), 1, "{asked}");
    await_local_parked(&state.join("records"), 1, &node.log());
    let ended = await_some("the eval ends", || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let retry = block_on(client::call_tool(
            &node.mcp_url(),
            GATE,
            &args,
            Some((&request_state(&asked), json!({}))),
        ))
        .ok()?
        .result;
        (retry["resultType"] != "input_required").then_some(retry)
    });
    let error = &ended["structuredContent"]["error"];
    assert_eq!(
        (&error["kind"], &error["message"]),
        (
            &json!("timeout"),
            &json!(
                "the eval exceeded its lifetime of 4s (limits.maxEvalLifetime), which counts time spent waiting for a human"
            )
        ),
        "{ended}"
    );
    assert_eq!(
        std::fs::read_to_string(files.join(crate::flow::FILE)).unwrap(),
        crate::flow::FIRST_LINE,
        "the asked write never ran"
    );
}
