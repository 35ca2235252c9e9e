//! Restarts, reconfiguration, startup failures, shutdown.

use std::collections::HashMap;
use std::time::Duration;

use codemode_runtime::{ToolError, ToolHost};
use codemode_upstream::{CallScope, UpstreamPool, UpstreamSpec};
use serde_json::json;

use codemode_test_support::scratch_dir;

use crate::{cx, everything, failed_message, peers, pool, stdio, wait_until};

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_server_fails_its_calls_and_comes_back() {
    peers::ensure_installed();
    // The server runs behind the tap, which logs every request it forwards: the kill waits for
    // the call to have reached the server, not for a guess at how long that takes.
    let dir = scratch_dir("upstream", "killed");
    let (requests, server_pid_file) = (dir.join("requests.jsonl"), dir.join("server.pid"));
    let tapped = peers::tapped(peers::everything_server_cmd(), &requests, &server_pid_file);
    let pool = pool(vec![("everything", stdio(tapped))]).await;
    let first = pool.status().remove(0);
    let tap_pid = first.pid.expect("a stdio server has a pid");
    assert_eq!(first.connects, 1);
    let server_pid = read_pid(&server_pid_file);

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
    wait_until(
        "the call to reach the server",
        Duration::from_secs(60),
        || {
            std::fs::read_to_string(&requests).is_ok_and(|log| {
                log.lines().any(|l| {
                    l.contains("\"tools/call\"") && l.contains("\"trigger-long-running-operation\"")
                })
            })
        },
    )
    .await;
    let killed = std::process::Command::new("kill")
        .arg("-9")
        .arg(server_pid.to_string())
        .status()
        .unwrap();
    assert!(killed.success());

    // The 30 s operation cannot have finished: the call fails because the connection closed.
    let r = call.await.unwrap();
    assert_eq!(
        failed_message(r),
        "upstream server `everything` closed the connection during `trigger-long-running-operation`"
    );
    // A call made while it restarts fails at once, or succeeds when the restart (100 ms
    // backoff) already happened: which one depends on scheduling, so both are accepted, each
    // with its exact value.
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
    assert_ne!(again.pid, Some(tap_pid));
    assert_eq!(again.last_error, None);
    assert_ne!(
        read_pid(&server_pid_file),
        server_pid,
        "a new server process"
    );
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
    assert_eq!(
        pool.set_upstreams(bad).await.map_err(|e| e.to_string()),
        Err("invalid upstream server name `a__b`: `__` separates server and tool names (use a single `_`)".to_string())
    );
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

/// The pid the tap wrote for the server it runs.
fn read_pid(file: &std::path::Path) -> u32 {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("no pid file {}: {e}", file.display()));
    text.trim()
        .parse()
        .unwrap_or_else(|e| panic!("pid file {}: {text:?}: {e}", file.display()))
}

/// `isolateSessions`: an eval's calls go over a server process of its own, started at its first
/// call, shared by its later calls, and ended with the eval (its scope dropped); another eval
/// gets another process.
#[tokio::test(flavor = "multi_thread")]
async fn an_isolated_servers_evals_each_have_a_process_that_ends_with_the_eval() {
    peers::ensure_installed();
    let dir = scratch_dir("upstream", "isolated");
    let (requests, server_pid_file) = (dir.join("requests.jsonl"), dir.join("server.pid"));
    let tapped = peers::tapped(peers::everything_server_cmd(), &requests, &server_pid_file);
    let pool = pool(vec![("everything", stdio(tapped).isolate_sessions(true))]).await;
    let shared = read_pid(&server_pid_file);
    let echo = async |scope: &CallScope| {
        pool.call_in("everything__echo", json!({"message": "a"}), &cx(), scope)
            .await
    };
    let first = CallScope::default();
    assert_eq!(echo(&first).await.unwrap(), json!("Echo: a"));
    let own = read_pid(&server_pid_file);
    assert_ne!(own, shared, "the eval's own process");
    assert_eq!(echo(&first).await.unwrap(), json!("Echo: a"));
    assert_eq!(read_pid(&server_pid_file), own, "its second call reuses it");
    let second = CallScope::default();
    assert_eq!(echo(&second).await.unwrap(), json!("Echo: a"));
    let other = read_pid(&server_pid_file);
    assert!(
        other != own && other != shared,
        "another eval, another process"
    );
    let alive = |pid: u32| std::path::Path::new(&format!("/proc/{pid}")).exists();
    drop(first);
    wait_until(
        "the first eval's process to end",
        Duration::from_secs(20),
        || !alive(own),
    )
    .await;
    assert!(alive(other) && alive(shared));
    drop(second);
    wait_until(
        "the second eval's process to end",
        Duration::from_secs(20),
        || !alive(other),
    )
    .await;
    assert!(alive(shared), "the shared connection stays");
    pool.shutdown().await;
}

/// Red team (rt11): an eval's own connections were opened under one lock for all servers, so a
/// server slow to start for the eval (up to its `startTimeoutSeconds`) held up the eval's calls
/// to every other isolated server, open ones included. Each server now has its own.
#[tokio::test(flavor = "multi_thread")]
async fn an_isolated_server_slow_to_open_holds_up_no_other_servers_calls() {
    peers::ensure_installed();
    let dir = scratch_dir("upstream", "isolated-slow");
    let (first, started) = (dir.join("first"), dir.join("started"));
    let (program, args) = peers::everything_server_cmd();
    let everything_cmd: Vec<String> = std::iter::once(program.display().to_string())
        .chain(args)
        .collect();
    // The shared connection (the first process) is server-everything; an eval's own never
    // answers `initialize`.
    let script = format!(
        "if mkdir {first} 2>/dev/null; then exec {everything}; else touch {started}; exec sleep 60; fi",
        first = shlex::try_quote(&first.display().to_string()).unwrap(),
        started = shlex::try_quote(&started.display().to_string()).unwrap(),
        everything = shlex::try_join(everything_cmd.iter().map(String::as_str)).unwrap(),
    );
    let slow = UpstreamSpec::stdio("sh", vec!["-c".to_string(), script])
        .isolate_sessions(true)
        .startup_timeout(Duration::from_secs(30));
    let fast = everything().isolate_sessions(true);
    let pool = pool(vec![("slow", slow), ("fast", fast)]).await;
    let scope = CallScope::default();
    let opening = tokio::spawn({
        let (pool, scope) = (pool.clone(), scope.clone());
        async move {
            pool.call_in("slow__echo", json!({"message": "s"}), &cx(), &scope)
                .await
        }
    });
    wait_until(
        "the slow server's own process",
        Duration::from_secs(20),
        || started.exists(),
    )
    .await;
    let echoed = pool
        .call_in("fast__echo", json!({"message": "f"}), &cx(), &scope)
        .await;
    assert_eq!(echoed, Ok(json!("Echo: f")));
    assert!(
        !opening.is_finished(),
        "the fast server's call did not wait for the slow server's opening"
    );
    opening.abort();
    pool.shutdown().await;
}

/// `isolateSessions` across a reload that changes the server's spec: an eval that already has
/// a connection of its own to the old server makes its next call over a connection to the new
/// one (the config in force), and its old process ends then rather than with the eval.
#[tokio::test(flavor = "multi_thread")]
async fn an_isolated_servers_changed_spec_reaches_an_eval_that_has_a_connection_already() {
    peers::ensure_installed();
    let dir = scratch_dir("upstream", "isolated-reload");
    let tapped_as = |n: &str| {
        let (requests, pid_file) = (dir.join(format!("{n}.jsonl")), dir.join(format!("{n}.pid")));
        (
            peers::tapped(peers::everything_server_cmd(), &requests, &pid_file),
            pid_file,
        )
    };
    let (old_cmd, old_pid_file) = tapped_as("old");
    let pool = pool(vec![("everything", stdio(old_cmd).isolate_sessions(true))]).await;
    let echo = async |scope: &CallScope| {
        pool.call_in("everything__echo", json!({"message": "a"}), &cx(), scope)
            .await
    };
    let eval = CallScope::default();
    assert_eq!(echo(&eval).await.unwrap(), json!("Echo: a"));
    let old_own = read_pid(&old_pid_file);

    let (new_cmd, new_pid_file) = tapped_as("new");
    let changed = stdio(new_cmd).isolate_sessions(true);
    pool.set_upstreams(HashMap::from([("everything".to_string(), changed)]))
        .await
        .unwrap();
    let new_shared = read_pid(&new_pid_file);
    assert_eq!(echo(&eval).await.unwrap(), json!("Echo: a"));
    let new_own = read_pid(&new_pid_file);
    assert_ne!(
        new_own, new_shared,
        "the eval's call went to a process of the new spec of its own"
    );
    let alive = |pid: u32| std::path::Path::new(&format!("/proc/{pid}")).exists();
    wait_until(
        "the eval's process of the old spec to end",
        Duration::from_secs(20),
        || !alive(old_own),
    )
    .await;
    drop(eval);
    pool.shutdown().await;
}
