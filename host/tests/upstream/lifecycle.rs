//! Restarts, reconfiguration, startup failures, shutdown.

use std::collections::HashMap;
use std::time::Duration;

use codemode_host::upstream::{UpstreamPool, UpstreamSpec};
use codemode_runtime::{ToolError, ToolHost};
use serde_json::json;

use crate::{cx, everything, failed_message, peers, pool, stdio, wait_until};

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_server_fails_its_calls_and_comes_back() {
    let pool = pool(vec![("everything", everything())]).await;
    let first = pool.status().remove(0);
    let pid = first.pid.expect("a stdio server has a pid");
    assert_eq!(first.connects, 1);

    let call = {
        let pool = pool.clone();
        tokio::spawn(async move {
            pool.call(
                "everything__trigger-long-running-operation",
                json!({"duration": 30, "steps": 30}),
                &cx(),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let killed = std::process::Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(killed.success());

    let r = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("call ended")
        .unwrap();
    assert_eq!(
        failed_message(r),
        "upstream server `everything` closed the connection during `trigger-long-running-operation`"
    );
    // Calls while it restarts fail fast, or succeed once it is back.
    match pool
        .call("everything__echo", json!({"message": "a"}), &cx())
        .await
    {
        Ok(v) => assert_eq!(v, json!("Echo: a")),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.starts_with("upstream server `everything` is not connected (restarting"),
                "{msg}"
            );
        }
    }
    wait_until("the restart", Duration::from_secs(20), || {
        pool.status()
            .first()
            .is_some_and(|s| s.connected && s.connects == 2)
    })
    .await;
    let again = pool.status().remove(0);
    assert_ne!(again.pid, Some(pid));
    assert!(again.last_error.is_none());
    assert_eq!(
        pool.call("everything__echo", json!({"message": "b"}), &cx())
            .await,
        Ok(json!("Echo: b"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn set_upstreams_adds_removes_and_reconnects() {
    peers::ensure_installed();
    let pool = pool(vec![("everything", everything())]).await;
    let pid = |pool: &UpstreamPool, name: &str| {
        pool.status()
            .into_iter()
            .find(|s| s.name == name)
            .and_then(|s| s.pid)
    };
    let everything_pid = pid(&pool, "everything").unwrap();
    let mut changes = pool.subscribe();
    changes.mark_unchanged();

    // Add `time`, keep `everything` as it is.
    let time = stdio(peers::time_server_cmd());
    let both = HashMap::from([
        ("everything".to_string(), everything()),
        ("time".to_string(), time.clone()),
    ]);
    pool.set_upstreams(both).await.unwrap();
    assert!(changes.has_changed().unwrap());
    assert_eq!(
        pid(&pool, "everything"),
        Some(everything_pid),
        "unchanged server kept"
    );
    assert!(
        pool.tool_names()
            .iter()
            .any(|n| n == "time__get_current_time")
    );

    // Remove `everything`, change `time`'s spec: it is reconnected.
    let time_pid = pid(&pool, "time").unwrap();
    let time2 = time.call_timeout(Duration::from_secs(5));
    changes.mark_unchanged();
    pool.set_upstreams(HashMap::from([("time".to_string(), time2)]))
        .await
        .unwrap();
    assert!(changes.has_changed().unwrap());
    assert!(pool.tool_names().iter().all(|n| n.starts_with("time__")));
    assert_ne!(pid(&pool, "time"), Some(time_pid));
    assert_eq!(
        pool.call("everything__echo", json!({"message": "x"}), &cx())
            .await,
        Err(ToolError::NotFound {
            tool: "everything__echo".into()
        })
    );
    // The removed child is gone (killed or exited) within a few seconds.
    wait_until("the removed child to exit", Duration::from_secs(10), || {
        !std::path::Path::new(&format!("/proc/{everything_pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{everything_pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "))
    })
    .await;
    // Invalid names are refused and leave the pool unchanged.
    let bad = HashMap::from([("a__b".to_string(), everything())]);
    assert!(pool.set_upstreams(bad).await.is_err());
    assert!(
        pool.tool_names()
            .iter()
            .any(|n| n == "time__get_current_time")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_cannot_start_fails_fast() {
    let pool = pool(vec![(
        "broken",
        UpstreamSpec::stdio("/nonexistent/mcp-server", Vec::<String>::new()),
    )])
    .await;
    let status = pool.status().remove(0);
    assert!(!status.connected);
    let err = status.last_error.expect("an error is recorded");
    assert!(
        err.contains("could not start `/nonexistent/mcp-server`"),
        "{err}"
    );
    let msg = failed_message(pool.call("broken__x", json!({}), &cx()).await);
    assert!(
        msg.starts_with(
            "upstream server `broken` is not connected (restarting; last error: could not start"
        ),
        "{msg}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_the_pool_kills_the_children() {
    let pool = pool(vec![("everything", everything())]).await;
    let pid = pool.status().remove(0).pid.unwrap();
    let alive =
        || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "));
    assert!(alive());
    drop(pool);
    wait_until("the child to exit", Duration::from_secs(10), || !alive()).await;
}
