//! Every server scenario of the suite against `codemode serve --http` fronting server-everything
//! (over stdio), in one run of the suite: the generic ones (initialize, ping, tools, logging,
//! completion, resource and prompt listings, SSE streams, DNS rebinding) pass; those needing
//! the reference server's own tools are listed in expected-failures.txt.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{checks, suite};
use crate::harness::{Scratch, Setup, Transport, assert_json, stdio_server};
use crate::peers;

/// Longest the upstream may take to start.
const UPSTREAM_DEADLINE: Duration = Duration::from_secs(60);

fn config(_: &Scratch) -> Value {
    json!({ "mcpServers": { "everything": stdio_server(peers::everything_server_cmd()) } })
}

/// `GET /readyz` of the server at `addr`: its JSON body.
fn readiness(addr: &str) -> Value {
    let mut stream = TcpStream::connect(addr).expect("connect to codemode serve");
    let request = format!("GET /readyz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .expect("send GET /readyz");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read /readyz");
    let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("/readyz answered {response:?} ({e})"))
}

/// Waits until `/readyz` reports every upstream `up`: the scenarios then see its resources
/// and prompts, not a server still starting.
fn wait_for_upstreams(url: &str) {
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let started = Instant::now();
    loop {
        let ready = readiness(addr);
        let upstreams = ready["checks"]["upstreams"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        if !upstreams.is_empty() && upstreams.values().all(|state| state == "up") {
            return;
        }
        assert!(
            started.elapsed() < UPSTREAM_DEADLINE,
            "the upstreams were not up within {UPSTREAM_DEADLINE:?}: {ready}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn codemode_serve_passes_the_server_scenarios() {
    let setup = Setup::new("conformance_server", Transport::Http, config);
    let url = setup.url().expect("an HTTP setup").to_string();
    wait_for_upstreams(&url);
    let out = setup.scratch.path("results");
    let printed = suite::server(&url, &out);
    let results = checks::load(&out, "server-");
    let offered = suite::scenarios().server;
    let names: Vec<&str> = offered.iter().map(String::as_str).collect();
    let wrong = checks::verdict(&names, &results);
    assert!(
        wrong.is_empty(),
        "{} conformance check(s) did not end as expected:\n  {}\n\nthe suite's output:\n{}\n{}",
        wrong.len(),
        wrong.join("\n  "),
        printed.stdout,
        printed.stderr
    );
    // What the listings saw: codemode's own tools, and server-everything's resources and
    // prompts under codemode's names.
    let documents = [
        "architecture.md",
        "extension.md",
        "features.md",
        "how-it-works.md",
        "instructions.md",
        "startup.md",
        "structure.md",
    ];
    let resources =
        documents.map(|d| format!("codemode://everything/demo://resource/static/document/{d}"));
    assert_json(
        "what the conformance client listed",
        &json!({
            "tools": results["tools-list"].details("tools-list")["tools"],
            "resources": results["resources-list"].details("resources-list")["resources"],
            "prompts": results["prompts-list"].details("prompts-list")["prompts"],
        }),
        &json!({
            "tools": ["eval", "search_tools", "get_tools"],
            "resources": resources,
            "prompts": ["everything__simple-prompt", "everything__args-prompt",
                "everything__completable-prompt", "everything__resource-prompt"],
        }),
    );
}
