//! Real programs, real process groups.

use std::path::Path;
use std::time::Duration;

use codemode_policies::Config;
use serde_json::{Value, json};

use super::*;

fn tools(commands: Value) -> CommandTools {
    let config = Config::from_json_str(&json!({ "commands": commands }).to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    CommandTools::from_config(&config)
}

fn failed(e: ToolError) -> (String, Option<Value>) {
    match e {
        ToolError::Failed { message, data } => (message, data),
        other => panic!("expected Failed, got {other:?}"),
    }
}

/// `/usr/bin/printf '%s\n' {a}` prints each argv element on its own line.
fn echo_args() -> CommandTools {
    tools(json!({"argv": {
        "command": "printf", "args": ["[%s]\n", "{a}", "{b?}"], "output": "lines",
        "inputSchema": {"type": "object", "required": ["a"], "properties": {
            "a": {"type": ["string", "integer", "boolean"]}, "b": {"type": "string"}}}}}))
}

#[tokio::test]
async fn hostile_values_arrive_as_one_literal_argument_each() {
    let dir = tempdir();
    let t = echo_args();
    let hostile = format!(
        "$(touch {d}/X); touch {d}/Y `touch {d}/Z` \"q\" 'q' | &",
        d = dir.display()
    );
    let got = t
        .call("argv", json!({"a": hostile, "b": "line1\nline2"}))
        .await
        .unwrap();
    assert_eq!(got, json!([format!("[{hostile}]"), "[line1", "line2]"]));
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "no file was created"
    );
    assert_eq!(
        t.call("argv", json!({"a": 7})).await.unwrap(),
        json!(["[7]"])
    );
}

#[tokio::test]
async fn invalid_or_option_like_arguments_never_start_the_program() {
    let dir = tempdir();
    let marker = dir.join("ran");
    let t = tools(json!({"touch": {
        "command": "touch", "args": ["{path}"],
        "inputSchema": {"type": "object", "required": ["path"], "additionalProperties": false,
            "properties": {"path": {"type": "string"}}}}}));
    let (message, data) = failed(t.call("touch", json!({"path": 3})).await.unwrap_err());
    assert_eq!(
        message,
        "invalid arguments for `touch`: /path: 3 is not of type \"string\""
    );
    assert_eq!(
        data,
        Some(json!({"errors": ["/path: 3 is not of type \"string\""]}))
    );
    let (message, _) = failed(
        t.call(
            "touch",
            json!({"path": format!("--reference={}", marker.display())}),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(
        message,
        "invalid arguments for `touch`: the argument `path` starts with `-`, so `touch` would \
         read it as an option; refused (the tool's inputSchema can allow it with \
         \"x-allowOption\": true)"
    );
    assert!(
        t.call("touch", json!({"path": "x", "extra": 1}))
            .await
            .is_err()
    );
    assert!(!marker.exists());
    t.call("touch", json!({"path": marker.to_str().unwrap()}))
        .await
        .unwrap();
    assert!(marker.exists(), "valid arguments run it");
}

#[tokio::test]
async fn only_the_named_environment_is_passed() {
    // SAFETY: a variable only this test reads; set before the child starts.
    unsafe { std::env::set_var("CODEMODE_SECRET_FOR_TEST", "leak") };
    let t = tools(
        json!({"env": {"command": "env", "output": "lines", "env": {"A": "1", "LANG": "C"}}}),
    );
    assert_eq!(
        t.call("env", json!({})).await.unwrap(),
        json!(["A=1", "LANG=C"])
    );
}

#[tokio::test]
async fn a_non_zero_exit_rejects_with_the_exit_code_and_the_stderr_tail() {
    let t = tools(json!({"fail": {"command": "sh", "args": ["-c",
        "echo partial; i=0; while [ $i -lt 2000 ]; do echo noise $i >&2; i=$((i+1)); done; \
         printf '\\033[31mfatal: bad\\033[0m\\n' >&2; exit 3"]}}));
    let (message, data) = failed(t.call("fail", json!({})).await.unwrap_err());
    assert_eq!(message, "`fail` exited with code 3: fatal: bad");
    let data = data.unwrap();
    assert_eq!(data["exitCode"], json!(3));
    let stderr = data["stderr"].as_str().unwrap();
    assert!(stderr.ends_with("noise 1999\nfatal: bad\n"), "{stderr}");
    assert!(stderr.len() <= process::STDERR_TAIL, "{}", stderr.len());
    assert!(!stderr.contains('\u{1b}'));
}

#[tokio::test]
async fn output_modes_and_ansi_stripping() {
    let t = tools(json!({
        "text": {"command": "printf", "args": ["\u{1b}[1;32mgreen\u{1b}[0m\n\u{1b}]0;title\u{7}x"]},
        "tabs": {"command": "printf", "args": ["A\tnotes.txt\n\tindented\u{1b}[2K\tend"]},
        "lines": {"command": "printf", "args": ["a\r\nb\n\nc\n"], "output": "lines"},
        "none": {"command": "true", "output": "lines"},
        "json": {"command": "printf", "args": ["{\"a\": [1, 2]}\n"], "output": "json"},
        "jsonl": {"command": "printf", "args": ["{\"n\":1}\n\n[2]\n"], "output": "jsonl"},
        "badjson": {"command": "printf", "args": ["nope"], "output": "json"},
        "badjsonl": {"command": "printf", "args": ["1\n{\n"], "output": "jsonl"}}));
    assert_eq!(t.call("text", json!({})).await.unwrap(), json!("green\nx"));
    // Tabs are text, not terminal control: kept.
    assert_eq!(
        t.call("tabs", json!({})).await.unwrap(),
        json!("A\tnotes.txt\n\tindented\tend")
    );
    assert_eq!(
        t.call("lines", json!({})).await.unwrap(),
        json!(["a", "b", "", "c"])
    );
    assert_eq!(t.call("none", json!({})).await.unwrap(), json!([]));
    assert_eq!(
        t.call("json", json!({})).await.unwrap(),
        json!({"a": [1, 2]})
    );
    assert_eq!(
        t.call("jsonl", json!({})).await.unwrap(),
        json!([{"n": 1}, [2]])
    );
    assert_eq!(
        failed(t.call("badjson", json!({})).await.unwrap_err()).0,
        "`badjson`'s output is not JSON (output \"json\"): expected ident at line 1 column 2"
    );
    assert_eq!(
        failed(t.call("badjsonl", json!({})).await.unwrap_err()).0,
        "`badjsonl`'s output line 2 is not JSON (output \"jsonl\"): EOF while parsing an object at line 1 column 1"
    );
}

#[tokio::test]
async fn output_past_max_output_stops_the_program() {
    let t = tools(
        json!({"zeros": {"command": "head", "args": ["-c", "1073741824", "/dev/zero"],
        "maxOutput": "1MiB", "timeoutSeconds": 60}}),
    );
    let (message, data) = failed(t.call("zeros", json!({})).await.unwrap_err());
    assert_eq!(
        message,
        "`zeros` wrote more than 1048576 bytes of output (maxOutput); it was stopped and its output dropped"
    );
    assert_eq!(data, None);
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempdir();
    let pidfile = dir.join("pid");
    let t = tools(json!({"sleepy": {"command": "sh", "timeoutSeconds": 2,
        "args": ["-c", format!("sleep 300 & echo $! > {}; wait", pidfile.display())]}}));
    let (message, _) = failed(t.call("sleepy", json!({})).await.unwrap_err());
    assert_eq!(
        message,
        "`sleepy` timed out after 2s (timeoutSeconds); it and every process it started were killed"
    );
    let pid = pid_in(&pidfile);
    assert!(gone(pid), "the grandchild sleep {pid} is still running");
}

#[tokio::test]
async fn dropping_the_call_kills_the_group_and_background_processes_do_not_outlive_it() {
    let dir = tempdir();
    let pidfile = dir.join("pid");
    let t = tools(json!({"sleepy": {"command": "sh", "timeoutSeconds": 600,
        "args": ["-c", format!("sleep 300 & echo $! > {}; wait", pidfile.display())]}}));
    // Boxed, so that `drop` drops the future itself (as an aborted eval task does).
    let mut call = Box::pin(t.call("sleepy", json!({})));
    // Poll until the grandchild exists, then drop the call (as a cancelled eval does).
    loop {
        tokio::select! {
            r = &mut call => panic!("finished: {r:?}"),
            _ = tokio::time::sleep(std::time::Duration::from_millis(20)) => {}
        }
        if std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n')) {
            break;
        }
    }
    drop(call);
    let pid = pid_in(&pidfile);
    assert!(
        gone(pid),
        "the grandchild sleep {pid} outlived the dropped call"
    );

    // A program that exits leaving a background process: the call ends, the process goes.
    std::fs::remove_file(&pidfile).unwrap();
    let t = tools(json!({"bg": {"command": "sh",
        "args": ["-c", format!("sleep 300 & echo $! > {}; echo done", pidfile.display())]}}));
    assert_eq!(t.call("bg", json!({})).await.unwrap(), json!("done\n"));
    let pid = pid_in(&pidfile);
    assert!(gone(pid), "the background sleep {pid} outlived the call");
}

#[tokio::test]
async fn cwd_is_used_and_unknown_tools_are_not_found() {
    let t = tools(json!({"pwd": {"command": "pwd", "cwd": "/usr"}}));
    assert_eq!(t.call("pwd", json!({})).await.unwrap(), json!("/usr\n"));
    assert!(matches!(
        t.call("nope", json!({})).await.unwrap_err(),
        ToolError::NotFound { tool } if tool == "nope"
    ));
    assert_eq!(t.names(), ["pwd"]);
    assert_eq!(t.infos()[0].description, "Runs `pwd`.");
}

/// Whether `pid` is no longer running: absent, or a zombie waiting for its reaper (it runs
/// nothing any more).
fn gone(pid: i32) -> bool {
    for _ in 0..200 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) => {
                let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
                if state.is_some_and(|s| s.starts_with('Z') || s.starts_with('X')) {
                    return true;
                }
            }
        }
        // The kill is asynchronous: give the kernel a moment (bounded; no timing assert).
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    false
}

fn tempdir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "codemode-commands-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    assert!(Path::new(&dir).is_dir());
    dir
}

/// A descendant that left the program's process group and session (`setsid`) is killed when
/// the program exits — the call returns at once, not at its timeout — and when the call times
/// out; a program killed by a signal is still reported as such.
#[tokio::test]
async fn a_setsid_descendant_does_not_outlive_the_call() {
    let t = tools(json!({"escape": {"command": "sh", "timeoutSeconds": 10,
        "args": ["-c", "setsid sleep 1000 & echo $!"]}}));
    let out = t.call("escape", json!({})).await.unwrap();
    let pid: i32 = out.as_str().unwrap().trim().parse().unwrap();
    assert!(
        exits_within(pid, Duration::from_secs(5)),
        "the setsid sleep {pid} outlived the call"
    );

    let dir = tempdir();
    let pidfile = dir.join("pid");
    let t = tools(json!({"stuck": {"command": "sh", "timeoutSeconds": 1,
        "args": ["-c", format!("setsid sleep 1000 >/dev/null 2>&1 & echo $! > {}; exec sleep 1000", pidfile.display())]}}));
    let (message, _) = failed(t.call("stuck", json!({})).await.unwrap_err());
    assert_eq!(
        message,
        "`stuck` timed out after 1s (timeoutSeconds); it and every process it started were killed"
    );
    let pid = pid_in(&pidfile);
    assert!(
        exits_within(pid, Duration::from_secs(5)),
        "the setsid sleep {pid} outlived the timed-out call"
    );

    let t = tools(json!({"killed": {"command": "sh", "args": ["-c", "kill -TERM $$"]}}));
    let (message, data) = failed(t.call("killed", json!({})).await.unwrap_err());
    assert_eq!(message, "`killed` was killed by signal 15");
    assert_eq!(
        data,
        Some(json!({"exitCode": null, "signal": 15, "stderr": ""}))
    );
}

/// The pid a script wrote to `file`.
fn pid_in(file: &Path) -> i32 {
    std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Whether `pid` ends within `limit`, waiting for the event itself: a pidfd (Linux 5.3) becomes
/// readable when its process exits; a pid already gone is gone.
fn exits_within(pid: i32, limit: Duration) -> bool {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    let fd = fd as libc::c_int;
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let millis = libc::c_int::try_from(limit.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one pollfd of this frame.
    let ready = unsafe { libc::poll(&mut poll, 1, millis) };
    // SAFETY: the descriptor opened above, closed once.
    unsafe { libc::close(fd) };
    ready == 1
}
