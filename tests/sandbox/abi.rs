//! Malformed guests: hand-written modules that misuse the host ABI. Every misuse ends the eval
//! with `ok: false`, kind `internal` (unless stated) and a message naming the problem — never a
//! panic.

use codemode_runtime::{CallStatus, ErrorKind, EvalOutcome, FnTools, Runtime, RuntimeConfig};
use serde_json::json;

use crate::{failed, failed_in, ok, opts, show};

const ENVELOPE: &str = r#"{"ok":true,"result":1}"#;
const RESUMED: &str = r#"{"ok":true,"result":"resumed"}"#;
/// A failure of a kind only the host may decide.
const HOST_KIND: &str = r#"{"ok":false,"error":{"kind":"cancelled","message":"x","line":null,"column":null,"stack":null}}"#;
/// A failure without its error.
const NO_ERROR: &str = r#"{"ok":false}"#;
/// Where the data segments put things.
const AT_ENVELOPE: u32 = 16;
const AT_BAD_UTF8: u32 = 64;
const AT_ECHO: u32 = 80;
const AT_ARGS: u32 = 96;
const AT_RESUMED: u32 = 128;
const AT_HOST_KIND: u32 = 256;
const AT_NO_ERROR: u32 = 512;
/// Far outside the single 64 KiB page.
const OUT: u32 = 0x7fff_0000;

/// A guest module with the given ABI version and export bodies.
struct Guest {
    version: u32,
    alloc: String,
    run: String,
    resume: String,
}

impl Guest {
    fn run(run: impl Into<String>) -> Self {
        Guest {
            version: 2,
            alloc: "(i32.const 4096)".into(),
            run: run.into(),
            resume: "(i32.const 0)".into(),
        }
    }

    /// `cm_run` starts a call to `echo` and waits; `cm_resume` runs `resume`.
    fn resume(resume: impl Into<String>) -> Self {
        let run = format!(
            "(drop (call $call_start (i32.const {AT_ECHO}) (i32.const 4) (i32.const {AT_ARGS}) (i32.const 2) (i32.const 0) (i32.const 0))) (i32.const 1)"
        );
        Guest {
            resume: resume.into(),
            ..Guest::run(run)
        }
    }

    fn wasm(&self) -> Vec<u8> {
        let Guest {
            version,
            alloc,
            run,
            resume,
        } = self;
        let esc = |s: &str| s.replace('"', "\\\"");
        let wat = format!(
            r#"(module
  (import "codemode" "call_start" (func $call_start (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "codemode" "log" (func $log (param i32 i32 i32)))
  (import "codemode" "finish" (func $finish (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const {AT_ENVELOPE}) "{envelope}")
  (data (i32.const {AT_BAD_UTF8}) "\ff\fe\fd")
  (data (i32.const {AT_ECHO}) "echo")
  (data (i32.const {AT_ARGS}) "{{}}")
  (data (i32.const {AT_RESUMED}) "{resumed}")
  (data (i32.const {AT_HOST_KIND}) "{host_kind}")
  (data (i32.const {AT_NO_ERROR}) "{no_error}")
  (func (export "cm_abi_version") (result i32) (i32.const {version}))
  (func (export "cm_alloc") (param i32) (result i32) {alloc})
  (func (export "cm_run") (param i32 i32 i32) (result i32) {run})
  (func (export "cm_resume") (param i32 i32 i32 i32) (result i32) {resume})
)"#,
            envelope = esc(ENVELOPE),
            resumed = esc(RESUMED),
            host_kind = esc(HOST_KIND),
            no_error = esc(NO_ERROR),
        );
        wat::parse_str(&wat).unwrap_or_else(|e| panic!("bad test module: {e}\n{wat}"))
    }
}

fn finish_ok() -> String {
    format!(
        "(call $finish (i32.const {AT_ENVELOPE}) (i32.const {}))",
        ENVELOPE.len()
    )
}

async fn eval_guest(guest: &Guest) -> EvalOutcome {
    let mut config = RuntimeConfig::default();
    config.cache_dir(None).max_concurrent_evals(4);
    let runtime = Runtime::with_guest(&config, &guest.wasm()).expect("the module links");
    let tools = FnTools::new().sync_tool("echo", Ok);
    runtime.eval("1", &opts(), &tools).await
}

#[tokio::test]
async fn well_behaved_hand_written_guests_work() {
    let outcome = eval_guest(&Guest::run(format!("{} (i32.const 0)", finish_ok()))).await;
    assert_eq!(ok(&outcome), &json!(1), "{}", show(&outcome));

    let log = format!("(call $log (i32.const 2) (i32.const {AT_ECHO}) (i32.const 4))");
    let resumed = format!(
        "{log} (call $finish (i32.const {AT_RESUMED}) (i32.const {})) (i32.const 0)",
        RESUMED.len()
    );
    let outcome = eval_guest(&Guest::resume(resumed)).await;
    assert_eq!(ok(&outcome), "resumed", "{}", show(&outcome));
    assert_eq!(outcome.logs.len(), 1);
    assert_eq!(outcome.logs[0].message, "echo");
    assert_eq!(outcome.tool_calls.len(), 1, "{}", show(&outcome));
    assert_eq!(
        (
            outcome.tool_calls[0].tool.as_str(),
            outcome.tool_calls[0].status
        ),
        ("echo", CallStatus::Ok)
    );
}

#[tokio::test]
async fn malformed_host_calls_are_internal_errors() {
    let start = |name: (u32, i64), args: (u32, i64)| {
        format!(
            "(drop (call $call_start (i32.const {}) (i32.const {}) (i32.const {}) (i32.const {}) (i32.const 0) (i32.const 0))) (i32.const 1)",
            name.0, name.1 as i32, args.0, args.1 as i32
        )
    };
    let cases: Vec<(&str, Guest, ErrorKind, &str)> = vec![
        (
            "finish: pointer out of bounds",
            Guest::run(format!(
                "(call $finish (i32.const {OUT}) (i32.const 8)) (i32.const 0)"
            )),
            ErrorKind::Internal,
            "outside the guest's memory",
        ),
        (
            "finish: huge length",
            Guest::run(format!(
                "(call $finish (i32.const {AT_ENVELOPE}) (i32.const -1)) (i32.const 0)"
            )),
            ErrorKind::Internal,
            "outside the guest's memory",
        ),
        (
            "finish twice",
            Guest::run(format!("{0} {0} (i32.const 0)", finish_ok())),
            ErrorKind::Internal,
            "twice",
        ),
        (
            "log: pointer out of bounds",
            Guest::run(format!(
                "(call $log (i32.const 0) (i32.const {OUT}) (i32.const 4)) (i32.const 0)"
            )),
            ErrorKind::Internal,
            "outside the guest's memory",
        ),
        (
            "log: invalid UTF-8",
            Guest::run(format!(
                "(call $log (i32.const 0) (i32.const {AT_BAD_UTF8}) (i32.const 3)) (i32.const 0)"
            )),
            ErrorKind::Internal,
            "UTF-8",
        ),
        (
            "log: bad level",
            Guest::run(format!(
                "(call $log (i32.const 9) (i32.const {AT_ECHO}) (i32.const 4)) (i32.const 0)"
            )),
            ErrorKind::Internal,
            "log level 9",
        ),
        (
            "call_start: name out of bounds",
            Guest::run(start((OUT, 4), (AT_ARGS, 2))),
            ErrorKind::Internal,
            "outside the guest's memory",
        ),
        (
            "call_start: name not UTF-8",
            Guest::run(start((AT_BAD_UTF8, 3), (AT_ARGS, 2))),
            ErrorKind::Internal,
            "UTF-8",
        ),
        (
            "call_start: arguments out of bounds",
            Guest::run(start((AT_ECHO, 4), (65_000, 1000))),
            ErrorKind::Internal,
            "outside the guest's memory",
        ),
        (
            "call_start: arguments not UTF-8",
            Guest::run(start((AT_ECHO, 4), (AT_BAD_UTF8, 3))),
            ErrorKind::Internal,
            "UTF-8",
        ),
        // Oversized arguments, or an oversized name, from a guest that does not reject them
        // itself (codemode's guest does, catchably): ended as an exception, not `internal`.
        (
            "call_start: huge name",
            Guest::run(start((AT_ECHO, 0xffff_ffff), (AT_ARGS, 2))),
            ErrorKind::Exception,
            "tool name of 4294967295 bytes",
        ),
        (
            "call_start: huge arguments",
            Guest::run(start((AT_ECHO, 4), (AT_ARGS, 0xffff_ffff))),
            ErrorKind::Exception,
            "4294967295 bytes",
        ),
        (
            "unknown status",
            Guest::run(format!("{} (i32.const 7)", finish_ok())),
            ErrorKind::Internal,
            "unknown status 7",
        ),
        (
            "DONE without finish",
            Guest::run("(i32.const 0)"),
            ErrorKind::Internal,
            "without reporting an outcome",
        ),
        (
            "PENDING with no call in flight",
            Guest::run("(i32.const 1)"),
            ErrorKind::Internal,
            "none is in flight",
        ),
        (
            "resume: DONE without finish",
            Guest::resume("(i32.const 0)"),
            ErrorKind::Internal,
            "without reporting an outcome",
        ),
        (
            "resume: unknown status",
            Guest::resume("(i32.const 5)"),
            ErrorKind::Internal,
            "unknown status 5",
        ),
        (
            "resume: PENDING with no call in flight",
            Guest::resume("(i32.const 1)"),
            ErrorKind::Internal,
            "none is in flight",
        ),
        (
            "resume: finish out of bounds",
            Guest::resume(format!(
                "(call $finish (i32.const {OUT}) (i32.const 1)) (i32.const 0)"
            )),
            ErrorKind::Internal,
            "outside the guest's memory",
        ),
        (
            "cm_alloc out of bounds",
            Guest {
                alloc: format!("(i32.const {OUT})"),
                ..Guest::run("(i32.const 0)")
            },
            ErrorKind::Internal,
            "cm_alloc",
        ),
        (
            "finish: a kind only the host decides",
            Guest::run(format!(
                "(call $finish (i32.const {AT_HOST_KIND}) (i32.const {})) (i32.const 0)",
                HOST_KIND.len()
            )),
            ErrorKind::Internal,
            "the guest reported error kind `cancelled`, which only the host decides",
        ),
        (
            "finish: a failure without its error",
            Guest::run(format!(
                "(call $finish (i32.const {AT_NO_ERROR}) (i32.const {})) (i32.const 0)",
                NO_ERROR.len()
            )),
            ErrorKind::Internal,
            "the guest reported a failure without an error",
        ),
        (
            "trap",
            Guest::run("(unreachable)"),
            ErrorKind::Internal,
            "unreachable",
        ),
    ];
    for (what, guest, kind, needle) in cases {
        let outcome = eval_guest(&guest).await;
        let error = failed_in(what, &outcome, kind);
        assert!(
            error.message.contains(needle),
            "{what}: the message should contain {needle:?}: {}",
            show(&outcome)
        );
    }
}

#[tokio::test]

async fn a_log_with_a_huge_length_is_an_internal_error() {
    let outcome = eval_guest(&Guest::run(format!(
        "(call $log (i32.const 0) (i32.const {AT_ECHO}) (i32.const -16)) (i32.const 0)"
    )))
    .await;
    let error = failed(&outcome, ErrorKind::Internal);
    assert!(
        error.message.contains("outside the guest's memory"),
        "{}",
        show(&outcome)
    );
}

#[tokio::test]
async fn another_abi_version_builds_but_every_eval_fails() {
    let guest = Guest {
        version: 3,
        ..Guest::run(format!("{} (i32.const 0)", finish_ok()))
    };
    let mut config = RuntimeConfig::default();
    config.cache_dir(None).max_concurrent_evals(4);
    let runtime = Runtime::with_guest(&config, &guest.wasm())
        .expect("a guest of another version still builds");
    for _ in 0..2 {
        let outcome = runtime.eval("1", &opts(), &FnTools::new()).await;
        let error = failed(&outcome, ErrorKind::Internal);
        assert!(
            error.message.contains("ABI version 3"),
            "{}",
            show(&outcome)
        );
    }
}
