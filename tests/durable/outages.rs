//! Failures in the middle of serving: Redis going away and coming back, and a node killed while
//! it runs a resumed eval.

use std::time::Duration;

use serde_json::{Value, json};

use crate::client::{self, approve_all, block_on, input_keys, request_state};
use crate::flow::{FILE, FIRST_LINE, GATE, prepare, script};
use crate::harness::{ASKED_TOOL, Cluster, await_some};

/// Calls `tool` on `url` until the result is complete, answering each input-required result
/// by approving every question (a question asked again after a failed save is answered by the
/// next round).
fn approve_until_complete(url: &str, args: &Value, first: &Value) -> Value {
    let mut asked = first.clone();
    await_some("a complete result", || {
        let reply = block_on(client::call_tool(
            url,
            GATE,
            args,
            Some((&request_state(&asked), approve_all(&asked))),
        ))
        .ok()?;
        if reply.result["resultType"] == "input_required" {
            asked = reply.result;
            return None;
        }
        Some(reply.result)
    })
}

/// Redis stops while the cluster serves: a plain eval still runs; an eval that would park stays
/// in memory (the log says so) and completes through its node; a retry for an eval parked
/// before the outage gets an error saying the store cannot be reached (not `internal`, not "run
/// it again"); once Redis is back (empty: it keeps nothing on disk here), the retry is told the
/// eval is gone, and evals park again.
#[test]
fn redis_stopped_mid_serve_keeps_evals_in_memory_and_says_so() {
    let mut cluster = Cluster::start("redis_down", 2, 0);
    prepare(&cluster.files);
    let node0 = cluster.node(0).mcp_url();
    let args = json!({"code": script(&cluster.files)});
    let parked = block_on(client::call_tool(&node0, GATE, &args, None))
        .unwrap()
        .result;
    assert_eq!(input_keys(&parked).len(), 1, "{parked}");
    cluster.await_parked(1);

    cluster.redis.stop();

    let plain = block_on(client::call_tool(
        &node0,
        "eval",
        &json!({"code": "return 6 * 7"}),
        None,
    ))
    .unwrap()
    .result;
    assert_eq!(plain["structuredContent"]["result"], 42, "{plain}");

    let kept = block_on(client::call_tool(&node0, GATE, &args, None))
        .unwrap()
        .result;
    assert_eq!(input_keys(&kept).len(), 1, "{kept}");
    await_some("node0 says the eval stays in memory", || {
        let log = cluster.node(0).log();
        (log.contains("could not be saved, it stays in memory")).then_some(())
    });

    // The eval parked before the outage, retried on the other node.
    let retry = block_on(client::call_tool(
        &cluster.node(1).mcp_url(),
        GATE,
        &args,
        Some((&request_state(&parked), approve_all(&parked))),
    ))
    .unwrap()
    .result;
    assert_eq!(
        (&retry["isError"], &retry["resultType"]),
        (&json!(true), &json!("complete")),
        "{retry}"
    );
    let text = retry["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("the durable store cannot be reached (")
            && text.ends_with(
                "so this node cannot tell whether this eval is saved there: retry with the same \
                 requestState once the store is back (starting the script over could repeat its calls)"
            ),
        "{retry}"
    );

    // The eval kept in memory completes through its node.
    let done = approve_until_complete(&node0, &args, &kept);
    assert_eq!(done["isError"], false, "{done}\n{}", cluster.logs());
    assert_eq!(
        done["structuredContent"]["result"]["after"],
        format!("{FIRST_LINE}total=333283335000\n"),
        "{done}"
    );

    cluster.redis.restart();
    // Redis kept nothing: the eval parked before the outage is gone, and the retry says so.
    let gone = block_on(client::call_tool(
        &cluster.node(1).mcp_url(),
        GATE,
        &args,
        Some((&request_state(&parked), approve_all(&parked))),
    ))
    .unwrap()
    .result;
    assert_eq!(
        gone,
        json!({"content": [{"type": "text", "text": "this eval is no longer waiting for input (it finished, timed out, or the server restarted); run it again"}],
               "isError": true, "resultType": "complete"})
    );
    let later = block_on(client::call_tool(&node0, GATE, &args, None))
        .unwrap()
        .result;
    assert_eq!(input_keys(&later).len(), 1, "{later}");
    let keys = cluster.await_parked(1);
    assert!(
        keys.contains(&format!("eval:{}", request_state(&later))),
        "{keys:?}"
    );
}

/// A node is killed (`SIGKILL`) while it runs a resumed eval, in the middle of a slow call made
/// after the asked write: the client's retry on another node gets an error saying the eval's
/// node stopped (after the node's lease on it ran out, not a hang); the write is not made
/// again, and the audit has it once and no `eval` record.
#[test]
fn a_node_killed_in_the_middle_of_a_resume_fails_the_retry_clearly_and_repeats_nothing() {
    let mut cluster = Cluster::start("killed_mid_resume", 2, 0);
    prepare(&cluster.files);
    let path = cluster.files.join(FILE);
    let written = format!("{FIRST_LINE}napping\n");
    let code = format!(
        "await codemode.{ASKED_TOOL}({{path: {path}, content: {written}}});\n\
         await codemode.nap({{}});\n\
         return 'woke';",
        path = json!(path.display().to_string()),
        written = json!(written),
    );
    let args = json!({"code": code});
    let node0 = cluster.node(0).mcp_url();
    let asked = block_on(client::call_tool(&node0, GATE, &args, None))
        .unwrap()
        .result;
    assert_eq!(input_keys(&asked).len(), 1, "{asked}");
    cluster.await_parked(1);

    // The answer, by retry to node0: it takes the eval, writes, and naps.
    let state = request_state(&asked);
    let answering = std::thread::spawn({
        let (node0, args, state, answers) = (
            node0.clone(),
            args.clone(),
            state.clone(),
            approve_all(&asked),
        );
        move || {
            block_on(client::call_tool(
                &node0,
                GATE,
                &args,
                Some((&state, answers)),
            ))
        }
    });
    await_some("the resumed eval's write", || {
        (std::fs::read_to_string(&path).ok()? == written).then_some(())
    });
    // Its audit record too: the audit is written beside the script, and a SIGKILL loses what
    // is still queued.
    await_some("the write's audit record", || {
        cluster
            .audit_of(0)
            .iter()
            .any(|r| r["event"] == "tool_call" && r["tool"] == ASKED_TOOL)
            .then_some(())
    });
    cluster.take(0).kill();
    assert!(
        answering.join().unwrap().is_err(),
        "the request to the killed node fails"
    );

    let node1 = cluster.node(1).mcp_url();
    let abandoned = json!({"content": [{"type": "text", "text": "the node that resumed this eval has not renewed its hold on it for over 6 s: either it stopped, and then the tool calls it made until then were made once (its audit log has them) and the rest of the script will not run, or it stalls, and then it may still finish: retry with the same requestState later to get its result if it does; starting the script over would repeat the calls already made"}],
                           "isError": true, "resultType": "complete"});
    for _ in 0..2 {
        let retry = block_on(client::call_tool(
            &node1,
            GATE,
            &args,
            Some((&state, approve_all(&asked))),
        ))
        .unwrap()
        .result;
        assert_eq!(retry, abandoned, "{}", cluster.logs());
    }
    // Nothing repeated: the file as the one write left it, a moment later still.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
    let audit = cluster.audit();
    let calls: Vec<(&str, &str)> = audit
        .iter()
        .filter(|r| r["event"] == "tool_call")
        .map(|r| {
            (
                r["tool"].as_str().unwrap_or_default(),
                r["decision"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(calls, [(ASKED_TOOL, "approved")], "{audit:#?}");
    assert_eq!(
        audit.iter().filter(|r| r["event"] == "eval").count(),
        0,
        "{audit:#?}"
    );
}
