//! Listing and calling tools; errors; timeouts; HTTP.

use std::time::{Duration, Instant};

use codemode_runtime::{ToolError, ToolHost};
use codemode_upstream::UpstreamSpec;
use serde_json::json;

use codemode_test_support::scratch_dir;

use crate::{cx, everything, failed_message, peers, pool, stdio, wait_until};

#[tokio::test(flavor = "multi_thread")]
async fn lists_and_calls_tools_of_several_servers() {
    peers::ensure_installed();
    let dir = scratch_dir("upstream", "list");
    std::fs::write(dir.join("hello.txt"), "hello from disk").unwrap();
    let pool = pool(vec![
        ("everything", everything()),
        ("fs", stdio(peers::filesystem_server_cmd(&dir))),
        ("time", stdio(peers::time_server_cmd())),
    ])
    .await;
    for s in pool.status() {
        assert!(s.connected, "{s:?}");
    }
    let names = pool.tool_names();
    for want in [
        "everything__echo",
        "everything__get-sum",
        "everything__get-structured-content",
        "fs__read_text_file",
        "fs__list_directory",
        "time__get_current_time",
        "time__convert_time",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}"
        );
    }
    let (_, echo) = pool
        .tools()
        .into_iter()
        .find(|(n, _)| n == "everything__echo")
        .unwrap();
    assert!(echo.input_schema.contains_key("properties"));

    let cx = cx();
    let echoed = pool
        .call("everything__echo", json!({"message": "hi"}), &cx)
        .await;
    assert_eq!(echoed, Ok(json!("Echo: hi")));
    let sum = pool
        .call("everything__get-sum", json!({"a": 2, "b": 3}), &cx)
        .await;
    assert_eq!(sum, Ok(json!("The sum of 2 and 3 is 5.")));
    let weather = pool
        .call(
            "everything__get-structured-content",
            json!({"location": "Chicago"}),
            &cx,
        )
        .await;
    assert_eq!(
        weather.unwrap()["conditions"],
        json!("Light rain / drizzle")
    );
    let path = dir.join("hello.txt").display().to_string();
    let text = pool
        .call("fs__read_text_file", json!({"path": path}), &cx)
        .await
        .unwrap();
    assert!(text.to_string().contains("hello from disk"), "{text}");
    let now = pool
        .call("time__get_current_time", json!({"timezone": "UTC"}), &cx)
        .await
        .unwrap();
    assert_eq!(now["timezone"], json!("UTC"), "{now}");

    pool.shutdown().await;
    assert!(pool.tools().is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_are_reported_clearly() {
    peers::ensure_installed();
    let dir = scratch_dir("upstream", "errors");
    let pool = pool(vec![
        ("everything", everything()),
        ("fs", stdio(peers::filesystem_server_cmd(&dir))),
    ])
    .await;
    let cx = cx();

    // isError results: the upstream's text is the message.
    let missing = dir.join("nope.txt").display().to_string();
    let msg = failed_message(
        pool.call("fs__read_text_file", json!({"path": missing}), &cx)
            .await,
    );
    assert!(
        msg.contains("ENOENT") || msg.contains("no such file"),
        "{msg}"
    );
    let msg = failed_message(
        pool.call("fs__read_text_file", json!({"path": "/etc/passwd"}), &cx)
            .await,
    );
    assert!(msg.to_lowercase().contains("access denied"), "{msg}");

    // Arguments must be an object.
    let msg = failed_message(pool.call("fs__read_text_file", json!(["x"]), &cx).await);
    assert_eq!(
        msg,
        "arguments to `fs__read_text_file` must be an object, got array"
    );

    // Unknown server, unknown tool, not a qualified name.
    for name in ["nosuch__echo", "everything__nosuch", "echo", "everything__"] {
        assert_eq!(
            pool.call(name, json!({}), &cx).await,
            Err(ToolError::NotFound {
                tool: name.to_string()
            })
        );
    }
    pool.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_time_out() {
    let pool = pool(vec![(
        "everything",
        everything().call_timeout(Duration::from_millis(500)),
    )])
    .await;
    let r = pool
        .call(
            "everything__trigger-long-running-operation",
            json!({"duration": 5, "steps": 5}),
            &cx(),
        )
        .await;
    assert_eq!(
        failed_message(r),
        "upstream server `everything` did not answer `trigger-long-running-operation` within 500ms"
    );
    // The connection is still usable.
    assert_eq!(
        pool.call("everything__echo", json!({"message": "x"}), &cx())
            .await,
        Ok(json!("Echo: x"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn streamable_http_upstream() {
    peers::ensure_installed();
    let port = free_port();
    let (program, _) = peers::everything_server_cmd();
    let mut command = tokio::process::Command::new(program);
    command.arg("streamableHttp").env("PORT", port.to_string());
    let _server = serving(command, port).await;
    let spec = UpstreamSpec::with_transport(codemode_upstream::UpstreamTransport::Http {
        url: format!("http://127.0.0.1:{port}/mcp"),
        headers: [("X-Codemode-Test".to_string(), "1".to_string())].into(),
        oauth: None,
    });
    let pool = pool(vec![("remote", spec)]).await;
    let status = pool.status().remove(0);
    assert!(status.connected, "{status:?}");
    assert_eq!(status.pid, None);
    assert_eq!(
        pool.call("remote__echo", json!({"message": "over http"}), &cx())
            .await,
        Ok(json!("Echo: over http"))
    );
    // list_changed arrives over the standalone SSE stream; elicitation over the POST's stream.
    wait_until("the elicitation tool", Duration::from_secs(10), || {
        pool.tool_names()
            .iter()
            .any(|n| n == "remote__trigger-elicitation-request")
    })
    .await;
    let r = pool
        .call("remote__trigger-elicitation-request", json!({}), &cx())
        .await;
    let text = r
        .expect("a declined elicitation is still a result")
        .to_string();
    assert!(text.to_lowercase().contains("decline"), "{text}");
}

/// An answer too large to read (a 50 MB image: 67 MB of base64, over rmcp's 16 MiB bound on
/// one message) fails its call at once, saying so and naming the upstream — over streamable
/// HTTP as over stdio — and the connection goes on: the next call to the same upstream works.
#[tokio::test(flavor = "multi_thread")]
async fn an_answer_too_large_to_read_fails_its_call_not_the_connection() {
    peers::ensure_installed();
    let server = peers::repo_root().join("tests/mcp/media_server.py");
    let port = free_port();
    let mut command = tokio::process::Command::new(peers::python());
    command.arg(&server).args(["--http", &port.to_string()]);
    let _http = serving(command, port).await;
    let pool = pool(vec![
        (
            "http",
            UpstreamSpec::http(format!("http://127.0.0.1:{port}/mcp")),
        ),
        (
            "stdio",
            UpstreamSpec::stdio(
                peers::python().display().to_string(),
                [server.display().to_string()],
            ),
        ),
    ])
    .await;
    for s in pool.status() {
        assert!(s.connected, "{s:?}");
    }
    let big = json!({"size": 50 * 1024 * 1024});
    let over = "bytes codemode reads in one message";
    let message = failed_message(pool.call("http__image", big.clone(), &cx()).await);
    assert_eq!(
        message,
        format!(
            "upstream server `http` answered `image`, but its answer was over the 16777216 {over} (a large image or file?); it was dropped"
        )
    );
    let message = failed_message(pool.call("stdio__image", big, &cx()).await);
    let bytes = message
        .strip_prefix("upstream server `stdio` answered `image`, but its answer was ")
        .and_then(|rest| {
            rest.strip_suffix(&format!(
                " bytes, over the 16777216 {over} from a stdio server (a large image or file?); it was dropped"
            ))
        })
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("{message}"));
    assert!((69_905_068..69_905_468).contains(&bytes), "{bytes}");
    for name in ["http__image", "stdio__image"] {
        let small = pool.call(name, json!({"size": 3}), &cx()).await.unwrap();
        assert_eq!(small[0], json!("3 bytes"), "{name}");
        assert_eq!(small[1]["size"], json!(3), "{name}");
    }
    for s in pool.status() {
        assert!(s.connected, "{s:?}");
    }
}

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `command`, an MCP server over HTTP on `port` (killed when the child is dropped), and
/// waits until it accepts connections.
async fn serving(mut command: tokio::process::Command, port: u16) -> tokio::process::Child {
    let child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let start = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "the HTTP server did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child
}
