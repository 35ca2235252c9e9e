//! The harness against a hostile or broken model endpoint and careless usage: what each gives
//! is a named failure of the case (exit 1) or a bad-usage error (exit 2), never the key, never
//! raw control or format characters, never unbounded memory.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use super::replay::{Api, Replay, read_request};
use super::{KEY, MODEL, codemode, repo, run, setup, temp_dir, text};

/// An endpoint that reads each request and answers it with `respond`.
fn endpoint(respond: impl Fn(&mut TcpStream) + Send + 'static) -> Replay {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            if read_request(&mut stream).is_ok() {
                respond(&mut stream);
            }
        }
    });
    Replay {
        port,
        mismatches: Arc::default(),
    }
}

/// An answer of `status` with `body` as it is (not necessarily JSON).
fn answer(status: &'static str, body: String) -> impl Fn(&mut TcpStream) + Send + 'static {
    move |stream| {
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    }
}

/// The one report line of a failed `read-codename` run, with `reason` first.
fn failed(reason: &str) -> [String; 2] {
    let unread = r#"no audit record matches {"decision":"allowed","status":"ok","tool":"files__read_text_file"}"#;
    let reasons = serde_json::to_string(&[reason, unread]).unwrap();
    [
        format!(r#"{{"name":"read-codename","verdict":"fail","reasons":{reasons},"audit":[]}}"#),
        "0 passed, 1 failed".to_string(),
    ]
}

/// An endpoint that quotes the key back in its error (as real APIs do for a wrong key): the
/// report shows `[redacted]` (`run` fails the test if the key appears anywhere).
#[test]
fn agent_eval_an_endpoint_echoing_the_key_never_prints_it() {
    let body = format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY}"}}}}"#);
    let replay = endpoint(answer("401 Unauthorized", body));
    let cases = ["read-codename"];
    let (code, lines, stderr) = run(Api::OpenAi, &replay, "echo-key", &cases, &[]);
    let reason = format!(
        r#"model endpoint, turn 1: POST http://127.0.0.1:{}/chat/completions: HTTP 401 Unauthorized: {{"error":{{"message":"Incorrect API key provided: [redacted]"}}}}"#,
        replay.port
    );
    assert_eq!(lines, failed(&reason), "{stderr}");
    assert_eq!(code, Some(1));
}

/// A 500 whose body hides a bidi override and a terminal escape: the case fails with the
/// status and the body's start, neutralised.
#[test]
fn agent_eval_a_500_with_control_characters_is_neutralised() {
    let replay = endpoint(answer(
        "500 Internal Server Error",
        "overloaded\u{202e}\u{1b}[2J".to_string(),
    ));
    let cases = ["read-codename"];
    let (code, lines, stderr) = run(Api::Anthropic, &replay, "http-500", &cases, &[]);
    let reason = format!(
        r"model endpoint, turn 1: POST http://127.0.0.1:{}/v1/messages: HTTP 500 Internal Server Error: overloaded\u202e\u001b[2J",
        replay.port
    );
    assert_eq!(lines, failed(&reason), "{stderr}");
    assert_eq!(code, Some(1));
}

/// A reply body that never ends is read up to the bound (4 MiB), not until memory or the
/// timeout runs out.
#[test]
fn agent_eval_an_endless_reply_stops_at_the_bound() {
    let replay = endpoint(|stream| {
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        );
        let chunk = vec![b' '; 1 << 16];
        // Until the harness hangs up.
        while write!(stream, "{:x}\r\n", chunk.len())
            .and_then(|()| stream.write_all(&chunk))
            .and_then(|()| stream.write_all(b"\r\n"))
            .is_ok()
        {}
    });
    let cases = ["read-codename"];
    let (code, lines, stderr) = run(
        Api::OpenAi,
        &replay,
        "endless",
        &cases,
        &["--case-timeout", "120"],
    );
    let reason = format!(
        "model endpoint, turn 1: POST http://127.0.0.1:{}/chat/completions: the reply is over 4194304 bytes",
        replay.port
    );
    assert_eq!(lines, failed(&reason), "{stderr}");
    assert_eq!(code, Some(1));
}

/// Careless usage exits 2 before any case runs, saying what to fix: a directory without case
/// files (it would report `0 passed, 0 failed` and succeed), a case whose profile the config
/// lacks, a model URL holding a password, a key with a newline.
#[test]
fn agent_eval_careless_usage_exits_2() {
    let (_, config) = setup("careless");
    let dir = temp_dir("agent-eval-careless-cases");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let case = dir.join("no-profile.yaml");
    std::fs::write(
        &case,
        "name: n\nprompt: p\nprofile: admin\nexpect: {outcome: denied_or_refused}\n",
    )
    .unwrap();
    let eval = |url: &str, key: &str, cases: &std::path::Path| {
        let out = codemode()
            .args(["agent-eval", "--api", "openai", "--model", MODEL])
            .args([
                "--model-url",
                url,
                "--api-key-env",
                "REPLAY_KEY",
                "--config",
            ])
            .arg(&config)
            .arg(cases)
            .env("REPLAY_KEY", key)
            .output()
            .unwrap();
        assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
        (out.status.code(), text(&out.stderr))
    };
    let url = "http://127.0.0.1:9";
    assert_eq!(
        eval(url, KEY, &empty),
        (
            Some(2),
            format!(
                "codemode: {}: the directory has no case files (*.yaml, *.yml)\n",
                empty.display()
            )
        )
    );
    assert_eq!(
        eval(url, KEY, &case),
        (
            Some(2),
            format!(
                "codemode: {}: `profile: admin`: the config has no such profile (it has readonly, supervised)\n",
                case.display()
            )
        )
    );
    let good = repo().join("examples/agent-eval/cases/read-codename.yaml");
    let (code, stderr) = eval(&format!("http://me:{KEY}@127.0.0.1:9"), KEY, &good);
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        "codemode: --model-url: the model URL holds a user name or password, which every error would print; give the key with --api-key-env\n"
    );
    assert_eq!(
        eval(url, &format!("{KEY}\n"), &good),
        (
            Some(2),
            "codemode: the API key in `REPLAY_KEY` (--api-key-env) has a character that cannot be sent in a header (a space, a control character or non-ASCII)\n".to_string()
        )
    );
}
