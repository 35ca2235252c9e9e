//! Load: a short soak (the CI version of `codemode bench --http`), and `SIGTERM` in the middle
//! of evals.

use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode_bench::http::{HttpOptions, HttpWorkload, Protocol, measure};
use codemode_test_support::peers;
use serde_json::{Value, json};

use crate::harness::{World, eval, eval_records, ledger, slow_server};

/// The generator for a few seconds, both protocol generations, a trivial and a tool-calling
/// workload: no error, and every descriptor the load opened is closed again.
#[test]
fn a_short_load_has_no_errors_and_leaves_no_descriptors() {
    let world = World::start("short_load", |dir| {
        let (command, args) = peers::time_server_cmd();
        json!({
            "mcpServers": {"time": {"command": command, "args": args}},
            "audit": {"dir": dir.join("audit")},
            // Results whose requests are about to take them are never dropped: with a bound of
            // one, 200 clients lost 130 answers when they were (a call then never returns).
            "limits": {"unfetchedResults": {"maxCount": 1}}
        })
    });
    let url = world.server.url.clone();
    let pid = world.server.pid();
    // One eval of each kind first: the upstream is up and the audit file open before the
    // baseline of descriptors is taken.
    let tokio = tokio::runtime::Runtime::new().unwrap();
    for workload in [HttpWorkload::Trivial, HttpWorkload::Tool] {
        let outcome = tokio
            .block_on(eval(&url, Protocol::Stateless, workload.code()))
            .unwrap();
        assert_eq!(outcome["ok"], true, "{outcome}");
    }
    let mut runs = 0;
    for (workload, protocol) in [
        (HttpWorkload::Trivial, Protocol::Stateless),
        (HttpWorkload::Tool, Protocol::Legacy),
    ] {
        let options = HttpOptions {
            clients: vec![8],
            warmup: Duration::from_millis(300),
            duration: Duration::from_millis(1500),
            workload: workload.clone(),
            sample_every: Duration::from_millis(200),
            ..HttpOptions::default()
        };
        let measured = measure(&options, &url, Some(pid), protocol, &mut |_| {}).unwrap();
        let (clients, run, samples) = &measured.runs[0];
        assert_eq!(*clients, 8);
        assert_eq!(
            (run.errors, run.first_errors.clone()),
            (0, vec![]),
            "{workload:?} over {protocol:?}"
        );
        assert!(run.measured > 0, "{workload:?} over {protocol:?}: no eval");
        let (before, after) = measured.fds_before_after.expect("fds are sampled");
        assert!(
            after <= before,
            "{workload:?} over {protocol:?}: {before} fds before the load, {after} after"
        );
        assert!(!samples.is_empty());
        runs += 1;
    }
    assert_eq!(runs, 2);
}

/// `SIGTERM` while evals are in flight: the listener closes first (new connections are
/// refused), every eval in flight still answers — those that finish within the grace period
/// with their result, the one that would never finish with a `cancelled` error — each has its
/// audit record, and the process exits 0.
#[test]
fn sigterm_during_evals_refuses_new_connections_answers_every_eval_and_exits_0() {
    let mut world = World::start("sigterm", |dir| {
        json!({
            "mcpServers": {"slow": slow_server(dir)},
            "audit": {"dir": dir.join("audit")}
        })
    });
    let url = world.server.url.clone();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    let tokio = tokio::runtime::Runtime::new().unwrap();
    // Six evals waiting 2 s on the upstream (both protocol generations), and one that waits
    // forever.
    let mut tasks = Vec::new();
    for i in 0..6 {
        let protocol = if i % 2 == 0 {
            Protocol::Stateless
        } else {
            Protocol::Legacy
        };
        let code = format!("return await codemode.slow__sleep({{seconds: 2, tag: \"e{i}\"}})");
        let (url, events) = (url.clone(), events.clone());
        tasks.push(tokio.spawn(async move {
            let outcome = eval(&url, protocol, &code).await;
            events.lock().unwrap().push(format!("answered e{i}"));
            outcome
        }));
    }
    let (hang_url, hang_events) = (url.clone(), events.clone());
    let hanging = tokio.spawn(async move {
        let outcome = eval(
            &hang_url,
            Protocol::Legacy,
            "return await codemode.slow__hang({tag: \"h\"})",
        )
        .await;
        hang_events.lock().unwrap().push("answered h".into());
        outcome
    });
    // Every call has reached the upstream (markers, not a clock).
    world.await_marker("started", 6);
    world.await_marker("hang-h", 1);

    let signalled = Instant::now();
    world.server.sigterm().unwrap();
    // New connections are refused once the listener closed.
    loop {
        if TcpStream::connect(&addr).is_err() {
            events.lock().unwrap().push("refused".into());
            break;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(10),
            "still accepting connections after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let outcomes: Vec<Result<Value, String>> = tasks
        .into_iter()
        .map(|t| tokio.block_on(t).unwrap())
        .collect();
    let hung = tokio.block_on(hanging).unwrap();
    let status = world.server.wait(Duration::from_secs(30)).unwrap();

    assert!(status.success(), "exit status {status}");
    let events = events.lock().unwrap().clone();
    assert_eq!(
        events[0], "refused",
        "the listener closed first: {events:?}"
    );
    assert_eq!(events.len(), 8, "{events:?}");
    for (i, outcome) in outcomes.iter().enumerate() {
        let outcome = outcome.as_ref().unwrap_or_else(|e| panic!("e{i}: {e}"));
        assert_eq!(outcome["ok"], true, "e{i}: {outcome}");
        assert_eq!(outcome["result"], json!({"result": format!("e{i}")}));
        assert_eq!(ledger(outcome), json!([["slow__sleep", "ok", null]]));
    }
    let hung = hung.unwrap_or_else(|e| panic!("the hanging eval got no answer: {e}"));
    assert_eq!(hung["ok"], false, "{hung}");
    assert_eq!(hung["error"]["kind"], "cancelled", "{hung}");

    // The server has exited: its audit writer flushed everything.
    let records = world.audit();
    let evals = eval_records(&records);
    assert_eq!(evals.len(), 7, "one eval record each: {records:#?}");
    let mut kinds: Vec<String> = evals
        .iter()
        .map(|r| match r["ok"].as_bool() {
            Some(true) => "ok".to_string(),
            _ => r["error_kind"].as_str().unwrap_or("?").to_string(),
        })
        .collect();
    kinds.sort();
    assert_eq!(kinds, ["cancelled", "ok", "ok", "ok", "ok", "ok", "ok"]);
}

/// `SIGTERM` to `codemode serve` over stdio while an eval is in flight (its client keeps stdin
/// open): the eval still answers on stdout, its audit record is written, and the process exits
/// 0 without waiting for stdin to close.
#[test]
fn sigterm_over_stdio_answers_the_eval_in_flight_and_exits_0() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};

    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("faults/sigterm_stdio");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("codemode.json");
    crate::harness::write_json(
        &config,
        &json!({"mcpServers": {"slow": slow_server(&dir)}, "audit": {"dir": dir.join("audit")}}),
    );
    let mut child = Command::new(crate::harness::CODEMODE)
        .args(["serve", "--config"])
        .arg(&config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "faults", "version": "1"}}}),
    );
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":1"), "{line}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "eval",
        "arguments": {"code": "return await codemode.slow__sleep({seconds: 1, tag: \"s\"})"}}}),
    );
    // The call is in flight on the upstream.
    let started = Instant::now();
    while !dir.join("started").exists() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the call never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // Notifications may come first (`tools/list_changed` once the upstream is up).
    let response: Value = loop {
        line.clear();
        stdout.read_line(&mut line).unwrap();
        let message: Value = serde_json::from_str(&line).unwrap();
        if message.get("id").is_some() {
            break message;
        }
    };
    assert_eq!(response["id"], 2, "{response}");
    let outcome = &response["result"]["structuredContent"];
    assert_eq!(outcome["ok"], true, "{response}");
    assert_eq!(outcome["result"], json!({"result": "s"}));
    // stdin is still open: the exit does not wait for it.
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    // Closed only now: the server exited with its stdin open.
    drop(stdin);
    assert!(status.success(), "{status}");
    let records = crate::harness::audit_records(&dir.join("audit"));
    assert_eq!(eval_records(&records).len(), 1, "{records:#?}");
}
