//! `console.*`: captured in order with their level, formatted readably.

use codemode_runtime::{ErrorKind, LogLevel};

use crate::{eval, failed, ok, show};

#[tokio::test]
async fn every_method_is_captured_with_its_level() {
    let code = "console.log('l');\nconsole.info('i');\nconsole.warn('w');\nconsole.error('e');\nconsole.debug('d');\n1";
    let outcome = eval(code).await;
    ok(&outcome);
    let got: Vec<_> = outcome
        .logs
        .iter()
        .map(|l| (l.level, l.message.as_str()))
        .collect();
    let want = [
        (LogLevel::Log, "l"),
        (LogLevel::Info, "i"),
        (LogLevel::Warn, "w"),
        (LogLevel::Error, "e"),
        (LogLevel::Debug, "d"),
    ];
    assert_eq!(got, want, "{}", show(&outcome));
}

#[tokio::test]
async fn values_are_formatted_readably() {
    let cases: &[(&str, &str)] = &[
        ("'a', 1, true, null, undefined", "a 1 true null undefined"),
        ("{x: 1, y: [1, 'two']}", r#"{"x":1,"y":[1,"two"]}"#),
        ("[1, {a: null}]", r#"[1,{"a":null}]"#),
        ("'n =', 3.5", "n = 3.5"),
        ("10n", "10n"),
        ("function named() {}", "[Function named]"),
        ("Symbol('s')", "Symbol(s)"),
    ];
    for (args, want) in cases {
        let outcome = eval(&format!("console.log({args});")).await;
        ok(&outcome);
        assert_eq!(outcome.logs.len(), 1, "{args}: {}", show(&outcome));
        assert_eq!(outcome.logs[0].message, *want, "{args}: {}", show(&outcome));
        assert!(!outcome.logs[0].message.contains("[object Object]"));
    }
    // A circular object cannot be JSON: still printed, without failing the eval.
    let outcome = eval("const o = {};\no.o = o;\nconsole.log(o);\n'done'").await;
    assert_eq!(ok(&outcome), "done", "{}", show(&outcome));
    assert_eq!(outcome.logs.len(), 1);
}

#[tokio::test]
async fn errors_are_printed_with_name_and_message() {
    let code = "console.error(new TypeError('bad input'));\nclass MyError extends Error {}\nMyError.prototype.name = 'MyError';\nconsole.warn('caught:', new MyError('oops'));\n1";
    let outcome = eval(code).await;
    ok(&outcome);
    assert_eq!(outcome.logs.len(), 2, "{}", show(&outcome));
    assert_eq!(outcome.logs[0].level, LogLevel::Error);
    assert!(
        outcome.logs[0].message.starts_with("TypeError: bad input"),
        "{}",
        show(&outcome)
    );
    assert!(
        outcome.logs[0].message.contains("script.js:1:"),
        "the stack points into the user's code: {}",
        show(&outcome)
    );
    assert!(
        outcome.logs[1].message.starts_with("caught: MyError: oops"),
        "{}",
        show(&outcome)
    );
    assert!(
        !outcome.logs[1].message.contains("codemode:prelude"),
        "{}",
        show(&outcome)
    );
}

#[tokio::test]
async fn logs_before_a_failure_are_kept() {
    let outcome = eval("console.log('before');\nthrow new Error('after');").await;
    failed(&outcome, ErrorKind::Exception);
    assert_eq!(outcome.logs.len(), 1, "{}", show(&outcome));
    assert_eq!(outcome.logs[0].message, "before");
}

#[tokio::test]
async fn console_can_be_replaced_by_the_script_without_harm() {
    // The script owns its globals: replacing console affects only itself.
    let outcome = eval("const seen = [];\nconsole.log = (m) => seen.push(m);\nconsole.log('x');\nconsole.info('kept');\nseen").await;
    assert_eq!(
        ok(&outcome),
        &serde_json::json!(["x"]),
        "{}",
        show(&outcome)
    );
    assert_eq!(outcome.logs.len(), 1);
    assert_eq!(outcome.logs[0].message, "kept");
}
