//! `codemode.<name>(args)`: results, arguments, and the error classes a script can catch.

use std::sync::{Arc, Mutex};

use codemode_runtime::{CallStatus, ErrorKind, FnTools};
use serde_json::{Value, json};

use crate::{basic_tools, eval_with, failed, failed_in, ok, opts, show};

#[tokio::test]
async fn calls_return_promises_of_json_results() {
    let tools = basic_tools().sync_tool("any-name.v2", |args| Ok(json!({"got": args})));
    let cases: &[(&str, Value)] = &[
        (
            "const p = codemode.add({a: 1, b: 2});\n[p instanceof Promise, await p]",
            json!([true, 3]),
        ),
        (
            "await codemode.echo({nested: {list: [1, 'two', null]}, s: 'é'})",
            json!({"nested": {"list": [1, "two", null]}, "s": "é"}),
        ),
        (
            "await codemode['any-name.v2']({x: 1})",
            json!({"got": {"x": 1}}),
        ),
        (
            "const name = 'echo';\nawait codemode[name]({k: 1})",
            json!({"k": 1}),
        ),
        // No arguments: the tool receives `{}`.
        ("await codemode.echo()", json!({})),
        ("await codemode['any-name.v2']()", json!({"got": {}})),
        ("async () => await codemode.add({a: 20, b: 22})", json!(42)),
        // `codemode` is not a thenable: awaiting it calls nothing.
        ("typeof (await codemode)", json!("object")),
    ];
    for (code, want) in cases {
        let outcome = eval_with(code, &opts(), &tools).await;
        assert_eq!(ok(&outcome), want, "{code}: {}", show(&outcome));
    }
}

/// Results the guest reads without QuickJS's JSON parser (`null`, booleans, integers of up to 9
/// digits) and ones next to them that go through it: each arrives as the value `JSON.parse`
/// gives, with the same type.
#[tokio::test]
async fn literal_results_arrive_as_json_parse_gives_them() {
    let tools = FnTools::new().sync_tool("answer", |args| Ok(args["v"].clone()));
    const RESULTS: &[&str] = &[
        "null",
        "true",
        "false",
        "0",
        "7",
        "-7",
        "999999999",
        "-999999999",
        "1234567890",
        "-1234567890",
        "2147483648",
        "0.5",
        "-0.0",
        "1e3",
        "\"12\"",
        "[1]",
    ];
    for json in RESULTS {
        let code = format!(
            "const r = await codemode.answer({{ v: JSON.parse('{json}') }});\nconst want = JSON.parse('{json}');\nreturn [typeof r, Object.is(r, want) || JSON.stringify(r) === JSON.stringify(want), r];"
        );
        let outcome = eval_with(&code, &opts(), &tools).await;
        let got = ok(&outcome);
        assert_eq!(got[1], json!(true), "{json}: {}", show(&outcome));
        let want: Value = serde_json::from_str(&json.replace("\\", "")).unwrap();
        let want_type = match want {
            Value::Null | Value::Array(_) => "object",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            _ => "string",
        };
        assert_eq!(got[0], json!(want_type), "{json}: {}", show(&outcome));
    }
}

/// A call's promise settles as one from `new Promise` would: a result that is a thenable (here
/// through `Object.prototype.then`) is adopted, a `then` getter that throws rejects the call,
/// and results that are not objects never look for `then`.
#[tokio::test]
async fn call_results_settle_as_promise_resolution_does() {
    let tools = basic_tools();
    let cases: &[(&str, Value)] = &[
        (
            "Object.prototype.then = function (resolve) { delete Object.prototype.then; resolve(['adopted', this.k]); };\nreturn await codemode.echo({ k: 1 });",
            json!(["adopted", 1]),
        ),
        (
            "Object.defineProperty(Object.prototype, 'then', { configurable: true, get() { delete Object.prototype.then; throw new RangeError('then getter'); } });\ntry { await codemode.echo({ k: 1 }); return 'resolved'; } catch (e) { return [e.name, e.message]; }",
            json!(["RangeError", "then getter"]),
        ),
        (
            "let reads = 0;\nObject.defineProperty(Object.prototype, 'then', { configurable: true, get() { reads++; return undefined; } });\nconst r = [await codemode.add({ a: 1, b: 2 }), await codemode.echo({ k: 2 })];\ndelete Object.prototype.then;\nreturn [r[0], r[1].k, reads];",
            json!([3, 2, 1]),
        ),
        (
            "const p = codemode.echo({ k: 3 });\nconst q = codemode.echo({ k: 4 });\nreturn [p !== q, p instanceof Promise, Object.getPrototypeOf(p) === Promise.prototype, (await Promise.all([p, q])).map((r) => r.k)];",
            json!([true, true, true, [3, 4]]),
        ),
    ];
    for (code, want) in cases {
        let outcome = eval_with(code, &opts(), &tools).await;
        assert_eq!(ok(&outcome), want, "{code}: {}", show(&outcome));
    }
}

#[tokio::test]
async fn tools_receive_the_arguments_as_json() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let tools = FnTools::new().sync_tool("record", move |args| {
        log.lock().unwrap().push(args);
        Ok(Value::Null)
    });
    let code = "await codemode.record();\nawait codemode.record({a: [1, 2], u: undefined, d: new Date(0)});\nawait codemode.record([1]);\nawait codemode.record('s');";
    let outcome = eval_with(code, &opts(), &tools).await;
    ok(&outcome);
    let want = vec![
        json!({}),
        json!({"a": [1, 2], "d": "1970-01-01T00:00:00.000Z"}),
        json!([1]),
        json!("s"),
    ];
    assert_eq!(*seen.lock().unwrap(), want);
}

#[tokio::test]
async fn non_serialisable_arguments_reject_with_type_error() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = calls.clone();
    let tools = FnTools::new().sync_tool("echo", move |args| {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(args)
    });
    for args in [
        "10n",
        "{n: 1n}",
        "(() => { const o = {}; o.o = o; return o; })()",
        "() => 1",
        "Symbol('x')",
    ] {
        let code = format!(
            "try {{\n  await codemode.echo({args});\n  return 'resolved';\n}} catch (e) {{\n  return [e instanceof TypeError, e.name, e.message];\n}}"
        );
        let outcome = eval_with(&code, &opts(), &tools).await;
        let result = ok(&outcome);
        assert_eq!(result[0], json!(true), "{args}: {}", show(&outcome));
        assert_eq!(result[1], json!("TypeError"), "{args}: {}", show(&outcome));
        assert!(
            result[2].as_str().unwrap().contains("JSON"),
            "{args}: {}",
            show(&outcome)
        );
        assert!(
            outcome.tool_calls.is_empty(),
            "{args}: nothing reaches the host: {}",
            show(&outcome)
        );
    }
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn tool_failures_reject_with_tool_error() {
    let code = r#"
try {
  await codemode.fail({});
  return "resolved";
} catch (e) {
  return {
    name: e.name, isToolError: e instanceof ToolError, isError: e instanceof Error,
    tool: e.tool, message: e.message, data: e.data,
  };
}"#;
    let outcome = eval_with(code, &opts(), &basic_tools()).await;
    let want = json!({
        "name": "ToolError", "isToolError": true, "isError": true,
        "tool": "fail", "message": "disk on fire", "data": {"code": 42},
    });
    assert_eq!(ok(&outcome), &want, "{}", show(&outcome));
    let record = &outcome.tool_calls[0];
    assert_eq!(
        (record.status, record.reason.as_deref()),
        (CallStatus::Error, Some("disk on fire"))
    );

    // Without data, `.data` is absent; uncaught, the eval fails with the tool's message.
    let outcome = eval_with(
        "try { await codemode.add({}) } catch (e) { return 'data' in e }",
        &opts(),
        &basic_tools(),
    )
    .await;
    assert_eq!(ok(&outcome), &json!(false), "{}", show(&outcome));
    let outcome = eval_with("await codemode.add({a: 1});", &opts(), &basic_tools()).await;
    let error = failed(&outcome, ErrorKind::Exception);
    assert!(
        error.message.contains("ToolError") && error.message.contains("b must be a number"),
        "{}",
        show(&outcome)
    );
}

#[tokio::test]
async fn unknown_tools_reject_with_suggestions() {
    let code = r#"
try {
  await codemode.ech({});
  return "resolved";
} catch (e) {
  return [e.name, e instanceof UnknownToolError, e instanceof ToolError, e.tool, e.message];
}"#;
    let outcome = eval_with(code, &opts(), &basic_tools()).await;
    let result = ok(&outcome);
    assert_eq!(
        result.as_array().unwrap()[..4],
        [
            json!("UnknownToolError"),
            json!(true),
            json!(true),
            json!("ech")
        ],
        "{}",
        show(&outcome)
    );
    let message = result[4].as_str().unwrap();
    assert!(
        message.contains("ech") && message.contains("`echo`"),
        "the closest name is listed: {message}"
    );
    assert!(
        !message.contains("`deny`"),
        "far names are not suggested: {message}"
    );
    assert_eq!(outcome.tool_calls[0].status, CallStatus::Error);

    // Nothing close: no suggestion, and no tools at all says so.
    let outcome = eval_with("await codemode.zzzzzzzzzzzz()", &opts(), &basic_tools()).await;
    let error = failed(&outcome, ErrorKind::Exception);
    assert!(
        error.message.contains("UnknownToolError") && !error.message.contains("did you mean"),
        "{}",
        show(&outcome)
    );
    let outcome = eval_with("await codemode.echo()", &opts(), &codemode_runtime::NoTools).await;
    assert!(
        failed(&outcome, ErrorKind::Exception)
            .message
            .contains("no tools"),
        "{}",
        show(&outcome)
    );
}

#[tokio::test]
async fn denied_calls_reject_with_tool_call_denied_error() {
    let code = r#"
try {
  await codemode.deny({path: "/etc"});
  return "resolved";
} catch (e) {
  return [e.name, e instanceof ToolCallDeniedError, e instanceof Error, e.toolName, e.reason, e.message];
}"#;
    let outcome = eval_with(code, &opts(), &basic_tools()).await;
    let want = json!([
        "ToolCallDeniedError",
        true,
        true,
        "deny",
        "policy_denied",
        "writes are not allowed"
    ]);
    assert_eq!(ok(&outcome), &want, "{}", show(&outcome));
    let record = &outcome.tool_calls[0];
    assert_eq!(
        (record.status, record.reason.as_deref()),
        (CallStatus::Denied, Some("policy_denied")),
        "{}",
        show(&outcome)
    );
}

#[tokio::test]
async fn scripts_catch_tool_errors_and_continue() {
    let code = r#"
const out = [];
for (const name of ["fail", "nope", "deny", "echo"]) {
  try {
    out.push(await codemode[name]({n: out.length}));
  } catch (e) {
    out.push(e.name);
  }
}
out"#;
    let outcome = eval_with(code, &opts(), &basic_tools()).await;
    assert_eq!(
        ok(&outcome),
        &json!(["ToolError", "UnknownToolError", "ToolCallDeniedError", {"n": 3}]),
        "{}",
        show(&outcome)
    );
    let statuses: Vec<_> = outcome.tool_calls.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [
            CallStatus::Error,
            CallStatus::Error,
            CallStatus::Denied,
            CallStatus::Ok
        ]
    );
}

/// Arguments that the guest encodes without `JSON.stringify` (plain objects of primitives) and
/// ones it must leave to it: whichever path a value takes, the host receives exactly the value
/// `JSON.stringify` gives (same numbers — integer or float — strings, keys, omissions).
#[tokio::test]
async fn tool_arguments_arrive_as_json_stringify_gives_them() {
    const ARGUMENTS: &[&str] = &[
        "{}",
        "{ i: 1 }",
        "{ a: -0, b: 0 / 0, c: 1 / 0, d: 2 ** 31, e: 2 ** 53, f: 2 ** 63, g: 1e20, h: 1e21 }",
        "{ a: 0.1 + 0.2, b: -1.5, c: 1e-7, d: 5e-324, e: 1.7976931348623157e308 }",
        "{ t: true, f: false, n: null, u: undefined }",
        "{ s: 'plain', q: 'quote \" back \\\\ slash', c: 'a\\nb\\tc\\u0001\\u001f', e: 'é 中 😀' }",
        "{ lone: '\\ud800', [Symbol('s')]: 1 }",
        "{ 2: 'b', 1: 'a', z: 1, y: 2 }",
        "{ nested: { a: [1, 2] } }",
        "{ get g() { return 7 } }",
        "{ toJSON() { return { replaced: true } } }",
        "Object.assign(Object.create({ inherited: 1 }), { own: 2 })",
        "Object.defineProperty({ a: 1 }, 'hidden', { value: 2, enumerable: false })",
        "new Proxy({ a: 1 }, {})",
        "Object.setPrototypeOf(new Number(5), Object.prototype)",
        "[1, 2]",
        "'text'",
        "42",
        "new Date(0)",
        "{ big: 1n }",
        // Read in place by the guest's QuickJS patch: 8-bit (Latin-1) keys and strings, a
        // string slice, a deleted property's empty slot; and what it declines: 16-bit keys,
        // concatenated (rope) strings, an own `toJSON` that is not a function, more properties
        // than it reads at once, other prototypes.
        "{ 'clé': 'déjà vu ÿ', 'k\\u0000': '\\u0000\\u007f\\u0080\\u00ff' }",
        "{ s: 'abcdefghijklmnopqrstuvwxyz'.repeat(10).slice(5, 200) }",
        "(() => { const o = { a: 1, b: 2, c: 3 }; delete o.b; o.d = 4; return o; })()",
        "{ '中': 1, 'é': 2 }",
        "{ rope: 'x'.repeat(300) + 'y'.repeat(300) }",
        "{ toJSON: 1, a: 2 }",
        "Object.fromEntries(Array.from({ length: 20 }, (_, i) => ['k' + i, i]))",
        "Object.assign(Object.create(null), { a: 1 })",
        "new (class A { constructor() { this.a = 1; } })()",
    ];
    let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let sink = received.clone();
    let tools = FnTools::new().sync_tool("record", move |args| {
        sink.lock().unwrap().push(args);
        Ok(json!(null))
    });
    for args in ARGUMENTS {
        received.lock().unwrap().clear();
        let code = format!(
            "const args = {args};\nlet text;\ntry {{ text = JSON.stringify(args); }} catch (e) {{ text = String(e); }}\ntry {{ await codemode.record(args); }} catch (e) {{ return {{ error: String(e), text }}; }}\nreturn {{ text }};"
        );
        let outcome = crate::eval_with(&code, &crate::opts(), &tools).await;
        let result = crate::ok(&outcome);
        let text = result["text"].as_str().expect("a text");
        match result.get("error") {
            // JSON.stringify itself fails (BigInt): the call is refused the same way.
            Some(error) => {
                assert!(
                    text.contains("TypeError")
                        && error
                            .as_str()
                            .is_some_and(|e| e.contains("not JSON-serialisable")),
                    "{args}: {}",
                    crate::show(&outcome)
                );
                assert!(received.lock().unwrap().is_empty(), "{args}");
            }
            None => {
                // The guest replaces lone surrogates (U+FFFD) before the host sees them.
                let expected: Value = serde_json::from_str(&text.replace("\\ud800", "\u{FFFD}"))
                    .unwrap_or_else(|e| panic!("{args}: {text}: {e}"));
                let got = received.lock().unwrap().clone();
                assert_eq!(got, vec![expected], "{args}: {}", crate::show(&outcome));
            }
        }
    }
}

#[tokio::test]
async fn codemode_answers_every_tool_name_and_cannot_be_changed() {
    let tools = basic_tools();
    let cases: &[(&str, Value)] = &[
        // Any string names a tool; the function is made once and kept.
        (
            "[typeof codemode.anything, codemode.echo === codemode.echo, codemode.echo.name, codemode[0].name]",
            json!(["function", true, "echo", "0"]),
        ),
        (
            "const { echo } = codemode;\nawait echo({k: 1})",
            json!({"k": 1}),
        ),
        // Tool functions are ordinary functions, but not constructors.
        (
            "const { echo } = codemode;\n[await echo.call(null, {k: 1}), await echo.apply(null, [{k: 2}]), await echo.bind(null)({k: 3}), echo instanceof Function, (() => { try { new echo({}); return 'constructed'; } catch (e) { return e.name; } })()]",
            json!([{"k": 1}, {"k": 2}, {"k": 3}, true, "TypeError"]),
        ),
        // `then` and symbols are not tools.
        (
            "[codemode.then, codemode[Symbol.iterator], (await codemode) === codemode]",
            json!([null, null, true]),
        ),
        (
            "['x' in codemode, 'then' in codemode, Symbol.iterator in codemode]",
            json!([true, false, false]),
        ),
        // No own keys or prototype, even after tools were used.
        (
            "codemode.echo;\n[Object.keys(codemode).length, Reflect.ownKeys(codemode).length, Object.getPrototypeOf(codemode), Object.getOwnPropertyDescriptor(codemode, 'echo')]",
            json!([0, 0, null, null]),
        ),
        // Reflect asks for `false` rather than an exception.
        (
            "[Reflect.set(codemode, 'x', 1), Reflect.defineProperty(codemode, 'x', {value: 1}), Reflect.deleteProperty(codemode, 'echo'), Reflect.setPrototypeOf(codemode, {})]",
            json!([false, false, false, false]),
        ),
        // The script is strict: each change throws a TypeError, and nothing changed.
        (
            "const tries = [() => { codemode.echo = 1; }, () => { codemode.fresh = 1; }, () => Object.defineProperty(codemode, 'x', {value: 1}), () => { delete codemode.echo; }, () => Object.setPrototypeOf(codemode, {}), () => { globalThis.codemode = {}; }];\nconst names = tries.map((f) => { try { f(); return 'changed'; } catch (e) { return e.name; } });\n[names, typeof codemode.echo, typeof codemode.x, Object.getPrototypeOf(codemode)]",
            json!([
                [
                    "TypeError",
                    "TypeError",
                    "TypeError",
                    "TypeError",
                    "TypeError",
                    "TypeError"
                ],
                "function",
                "function",
                null
            ]),
        ),
    ];
    for (code, want) in cases {
        let outcome = eval_with(code, &opts(), &tools).await;
        assert_eq!(ok(&outcome), want, "{code}: {}", show(&outcome));
    }
}

/// Red team (error kinds): a tool name is chosen by the script, so a name past
/// [`codemode_runtime::Runtime::MAX_TOOL_NAME_BYTES`] is rejected by the guest itself,
/// catchably, as an `UnknownToolError` that never reaches the host (no ledger row) — it used to
/// end the eval with kind `internal` ("malformed host call"), which only a host bug may
/// produce. Names at the limit are ordinary unknown tools.
#[tokio::test]
async fn an_overlong_tool_name_is_rejected_catchably() {
    let max = codemode_runtime::Runtime::MAX_TOOL_NAME_BYTES;
    let cases: &[(String, usize)] = &[
        (format!("codemode['x'.repeat({})]({{}})", max + 1), max + 1),
        ("codemode['x'.repeat(100000)]({})".to_string(), 100_000),
        // Multi-byte characters count in UTF-8 bytes: 342 × 3 bytes = 1026.
        ("codemode['€'.repeat(342)]()".to_string(), 1026),
    ];
    for (call, len) in cases {
        let message = format!(
            "unknown tool: its name is {len} bytes long, more than the {max}-byte limit of a tool name"
        );
        let uncaught = eval_with(
            &format!("const a = 1;\n  await {call}"),
            &opts(),
            &basic_tools(),
        )
        .await;
        let error = failed(&uncaught, ErrorKind::Exception);
        assert_eq!(
            error.message,
            format!("UnknownToolError: {message}"),
            "{call}"
        );
        // At the `[` of the call.
        assert_eq!((error.line, error.column), (Some(2), Some(17)), "{call}");
        assert!(
            uncaught.tool_calls.is_empty(),
            "{call}: {}",
            show(&uncaught)
        );

        let code = format!(
            "try {{ await {call}; }} catch (e) {{ return [e.name, e.message, e instanceof ToolError]; }}"
        );
        let caught = eval_with(&code, &opts(), &basic_tools()).await;
        assert_eq!(
            ok(&caught),
            &json!(["UnknownToolError", message, true]),
            "{call}"
        );
        assert!(caught.tool_calls.is_empty(), "{call}: {}", show(&caught));
    }
    // At the limit: an unknown tool, which the script can catch.
    let code = format!(
        "try {{ await codemode['x'.repeat({max})]({{}}); }} catch (e) {{ return [e.name, e.message.includes('x'.repeat({max}))]; }}"
    );
    let outcome = eval_with(&code, &opts(), &basic_tools()).await;
    assert_eq!(ok(&outcome), &json!(["UnknownToolError", true]));
}

/// Arguments past [`codemode_runtime::Runtime::MAX_TOOL_ARGS_BYTES`] are rejected by the guest
/// itself, catchably, as a `ToolError` that never reaches the host.
#[tokio::test]
async fn overlong_arguments_are_rejected_catchably() {
    let max = codemode_runtime::Runtime::MAX_TOOL_ARGS_BYTES;
    let cases: &[(&str, usize)] = &[
        ("codemode.echo({s: 'x'.repeat(9 << 20)})", (9 << 20) + 8),
        (
            "codemode.echo({toJSON() { return 'x'.repeat(9 << 20) }})",
            (9 << 20) + 2,
        ),
    ];
    for (call, len) in cases {
        let message = format!(
            "the arguments are {len} bytes of JSON, more than the {max}-byte limit of a tool call"
        );
        let code =
            format!("try {{ await {call}; }} catch (e) {{ return [e.name, e.message, e.tool]; }}");
        let caught = eval_with(&code, &opts(), &basic_tools()).await;
        assert_eq!(
            ok(&caught),
            &json!(["ToolError", message, "echo"]),
            "{call}"
        );
        assert!(caught.tool_calls.is_empty(), "{call}: {}", show(&caught));
    }
}

/// Red team, contained (error kinds): hostile scripts that strain the tool-call path end as
/// the script's own failure — `exception`, `memory_limit` or `syntax` — never `internal`.
#[tokio::test]
async fn hostile_tool_calls_never_end_an_eval_as_internal() {
    let big = format!("'{}'.length", "x".repeat(80 << 20));
    // (script, kind, start of the message, ledger rows)
    let cases: Vec<(String, ErrorKind, &str, usize)> = vec![
        ("1\u{0}+1".into(), ErrorKind::Syntax, "SyntaxError", 0),
        (
            big,
            ErrorKind::MemoryLimit,
            "the script exceeded its memory limit",
            0,
        ),
        (
            "let a = []; for (let i = 0; i < 1e6; i++) a = [a]; await codemode.echo({a})".into(),
            ErrorKind::MemoryLimit,
            "",
            0,
        ),
        (
            "const s = []; try { while (true) s.push('x'.repeat(1e6)); } catch (e) {}\n\
          await codemode.echo({big: 'y'.repeat(1e6)})"
                .into(),
            ErrorKind::MemoryLimit,
            "",
            0,
        ),
        (
            "await codemode.echo({s: 'x'.repeat(9 << 20)})".into(),
            ErrorKind::Exception,
            "ToolError: the arguments are 9437192 bytes of JSON, more than the 8388608-byte limit",
            0,
        ),
        (
            "await codemode.echo({toJSON() { return 'x'.repeat(9 << 20) }})".into(),
            ErrorKind::Exception,
            "ToolError: the arguments are 9437186 bytes of JSON, more than the 8388608-byte limit",
            0,
        ),
        (
            "await codemode[Symbol.iterator]()".into(),
            ErrorKind::Exception,
            "TypeError: not a function",
            0,
        ),
        (
            "await codemode[123]()".into(),
            ErrorKind::Exception,
            "UnknownToolError: unknown tool `123`",
            1,
        ),
        (
            "await codemode.echo(() => 1)".into(),
            ErrorKind::Exception,
            "TypeError: codemode.echo: arguments are not JSON-serialisable (got a function)",
            0,
        ),
        (
            "await codemode.echo(Symbol('x'))".into(),
            ErrorKind::Exception,
            "TypeError: codemode.echo: arguments are not JSON-serialisable (got a symbol)",
            0,
        ),
        (
            "await codemode.echo({toJSON() { throw new Error('tj') }})".into(),
            ErrorKind::Exception,
            "TypeError: codemode.echo: arguments are not JSON-serialisable: tj",
            0,
        ),
        (
            "await codemode.echo({get x() { throw new Error('getter') }})".into(),
            ErrorKind::Exception,
            "TypeError: codemode.echo: arguments are not JSON-serialisable: getter",
            0,
        ),
        (
            "await codemode.echo(new Proxy({}, {ownKeys() { throw new Error('px') }}))".into(),
            ErrorKind::Exception,
            "TypeError: codemode.echo: arguments are not JSON-serialisable: px",
            0,
        ),
    ];
    for (code, kind, message, calls) in &cases {
        let outcome = eval_with(code, &opts(), &basic_tools()).await;
        let shown_code: String = code.chars().take(80).collect();
        let error = failed_in(&shown_code, &outcome, *kind);
        assert!(
            error.message.starts_with(message),
            "{shown_code}: {}",
            error.message
        );
        assert_eq!(outcome.tool_calls.len(), *calls, "{shown_code}");
    }
}
