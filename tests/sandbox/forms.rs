//! The two code forms, REPL-like results, JSON-serialisability, positions in the user's code.

use codemode_runtime::ErrorKind;
use serde_json::{Value, json};

use crate::{eval, failed, failed_in, show};

#[tokio::test]
async fn code_forms_and_completion_values() {
    let cases: &[(&str, &str, Value)] = &[
        ("async arrow", "async () => { return 1 + 1 }", json!(2)),
        (
            "async arrow awaiting",
            "async () => {\n  const x = await Promise.resolve(20);\n  return x + 1;\n}",
            json!(21),
        ),
        (
            "async arrow without return",
            "async () => { 1 + 1 }",
            Value::Null,
        ),
        ("plain arrow", "() => [1, 2]", json!([1, 2])),
        (
            "script with return",
            "const a = 2;\nreturn a * 3;",
            json!(6),
        ),
        (
            "top-level await and return",
            "const v = await Promise.resolve(5);\nreturn v * 2;",
            json!(10),
        ),
        (
            "return inside a block",
            "const a = 1;\nif (a) {\n  return 'then';\n}\nreturn 'else';",
            json!("then"),
        ),
        ("last expression", "const a = 1;\na + 41", json!(42)),
        (
            "last expression after await",
            "const v = await Promise.resolve(7);\nv",
            json!(7),
        ),
        (
            "last expression statement wins",
            "1;\n'two';\nlet z = 3;",
            json!("two"),
        ),
        (
            "object literal",
            "({a: [1, 'x', null, true], b: {c: 1.5}})",
            json!({"a": [1, "x", null, true], "b": {"c": 1.5}}),
        ),
        ("string", "'hello'", json!("hello")),
        ("undefined", "undefined", Value::Null),
        ("declaration only", "let x = 1;", Value::Null),
        ("empty script", "", Value::Null),
        ("return undefined", "return undefined;", Value::Null),
        (
            "awaited promise result",
            "Promise.resolve({ok: 1})",
            json!({"ok": 1}),
        ),
        (
            "Date serialises as a string",
            "typeof JSON.parse(JSON.stringify(new Date(0)))",
            json!("string"),
        ),
    ];
    for (what, code, want) in cases {
        let outcome = eval(code).await;
        assert!(outcome.ok, "{what}: {}", show(&outcome));
        assert_eq!(&outcome.result, want, "{what}: {}", show(&outcome));
    }
}

#[tokio::test]
async fn non_serialisable_results_are_clear_errors() {
    let cases: &[(&str, &str)] = &[
        ("function returned from a script", "return () => 1;"),
        ("function from an async arrow", "async () => () => 1"),
        ("symbol", "Symbol('s')"),
        ("BigInt", "10n"),
        ("circular object", "const o = {};\no.self = o;\no"),
        ("BigInt inside an object", "({n: 1n})"),
    ];
    for (what, code) in cases {
        let outcome = eval(code).await;
        let error = failed_in(what, &outcome, ErrorKind::Exception);
        assert!(
            error.message.contains("JSON"),
            "{what}: the message should mention JSON: {}",
            show(&outcome)
        );
    }
}

/// Where an error is expected: `token` is the text that begins at the reported column.
struct Position {
    what: &'static str,
    code: &'static str,
    kind: ErrorKind,
    line: u32,
    token: &'static str,
}

const THROWN: &[Position] = &[
    Position {
        what: "script: throw",
        code: "const a = 1;\nthrow new Error('boom');\n",
        kind: ErrorKind::Exception,
        line: 2,
        token: "Error('boom')",
    },
    Position {
        what: "script with return: throw",
        code: "const a = 1;\n\n  throw new Error('boom');\nreturn 1",
        kind: ErrorKind::Exception,
        line: 3,
        token: "Error('boom')",
    },
    Position {
        what: "async arrow: throw",
        code: "async () => {\n  const a = 1;\n    throw new Error('boom');\n}",
        kind: ErrorKind::Exception,
        line: 3,
        token: "Error('boom')",
    },
    Position {
        what: "script: expression statement",
        code: "const a = 1;\n  undefinedThing.x;\n",
        kind: ErrorKind::Exception,
        line: 2,
        token: "undefinedThing",
    },
    Position {
        what: "script with return: expression statement",
        code: "const a = 1;\n  undefinedThing.x;\nreturn 2",
        kind: ErrorKind::Exception,
        line: 2,
        token: "undefinedThing",
    },
    Position {
        what: "async arrow: expression statement",
        code: "async () => {\n  const a = 1;\n     undefinedThing.x;\n}",
        kind: ErrorKind::Exception,
        line: 3,
        token: "undefinedThing",
    },
    Position {
        what: "script with return: nested function",
        code: "const a = 1;\nfunction g() {\n  null.x;\n}\ng();\nreturn 1",
        kind: ErrorKind::Exception,
        line: 3,
        // A failed property read is reported at the property's name.
        token: "x;",
    },
    // A declaration's initializer that fails is reported in it, not at the first statement.
    Position {
        what: "script: property read in a declaration",
        code: "const o={};\nconst b=2;\nconst c=o.list.length;",
        kind: ErrorKind::Exception,
        line: 3,
        token: "length;",
    },
    Position {
        what: "script with return: element read in a declaration",
        code: "const o={};\nconst b=2;\nconst c=o['list'].length;\nreturn c",
        kind: ErrorKind::Exception,
        line: 3,
        token: "length;",
    },
    Position {
        what: "async script: element read in a declaration",
        code: "const o = await {};\nconst b = 2;\nconst c = o.list[0];",
        kind: ErrorKind::Exception,
        line: 3,
        token: "[0]",
    },
    Position {
        what: "script: an undefined name in a declaration",
        code: "const o = {};\nlet b = 2;\nvar c = nope + 1;",
        kind: ErrorKind::Exception,
        line: 3,
        token: "nope",
    },
    Position {
        what: "after an await",
        code: "await Promise.resolve(1);\nconst b = 2;\n   throw new TypeError('late');\n",
        kind: ErrorKind::Exception,
        line: 3,
        token: "TypeError('late')",
    },
];

#[tokio::test]
async fn thrown_errors_point_into_the_users_code() {
    for case in THROWN {
        let outcome = eval(case.code).await;
        let error = failed_in(case.what, &outcome, case.kind);
        let column = case
            .code
            .lines()
            .nth(case.line as usize - 1)
            .and_then(|l| l.find(case.token))
            .unwrap() as u32
            + 1;
        assert_eq!(
            (error.line, error.column),
            (Some(case.line), Some(column)),
            "{}: {}",
            case.what,
            show(&outcome)
        );
        let stack = error.stack.as_deref().unwrap_or_default();
        assert!(
            stack.contains(&format!("script.js:{}:{column}", case.line)),
            "{}: the stack should name the user's position: {}",
            case.what,
            show(&outcome)
        );
    }
}

/// Syntax errors of code without top-level `return`, and of code with it.
const SYNTAX: &[(&str, &str, u32)] = &[
    ("script", "const a = 1;\nconst b = ;\n", 2),
    (
        "async arrow",
        "async () => {\n  const a = 1;\n  const b = ;\n}",
        3,
    ),
    ("first line", "const = 1;", 1),
];
const SYNTAX_WITH_RETURN: &[(&str, &str, u32)] = &[
    (
        "script with return",
        "const a = 1;\nreturn a;\n  const = 2;\n",
        3,
    ),
    (
        "redeclaration with return",
        "const a = 1;\nconst a = 2;\nreturn a",
        2,
    ),
    ("first line with return", "return 1; const = 2;", 1),
];

/// Checks the line; the sandbox leaves the column out (QuickJS places it at a token of its
/// choosing), and `codemode_script::locate_syntax_error` (oxc) then puts it inside that line.
async fn check_syntax_errors(cases: &[(&str, &str, u32)]) {
    for (what, code, line) in cases {
        let outcome = eval(code).await;
        let error = failed_in(what, &outcome, ErrorKind::Syntax);
        assert!(
            error.message.contains("SyntaxError"),
            "{what}: {}",
            show(&outcome)
        );
        assert_eq!(error.line, Some(*line), "{what}: {}", show(&outcome));
        assert_eq!(error.column, None, "{what}: {}", show(&outcome));
        let mut located = error.clone();
        codemode_script::locate_syntax_error(code, &mut located);
        assert_eq!(located.line, Some(*line), "{what}: {located:?}");
        // A redeclaration is an early error QuickJS reports but oxc's parser does not: no column.
        if what.starts_with("redeclaration") {
            assert_eq!(located.column, None, "{what}: {located:?}");
            continue;
        }
        let column = located.column.expect("oxc finds the column");
        let width = code.lines().nth(*line as usize - 1).unwrap().len() as u32;
        assert!(
            (1..=width + 1).contains(&column),
            "{what}: column {column} outside the line: {located:?}"
        );
    }
}

#[tokio::test]
async fn syntax_errors_point_into_the_users_code() {
    check_syntax_errors(SYNTAX).await;
    check_syntax_errors(SYNTAX_WITH_RETURN).await;
}

#[tokio::test]
async fn syntax_error_at_the_end_of_a_script_with_return() {
    // The block is never closed: the parser notices at the end of the input.
    for code in [
        "const a = 1;\nif (a) {\n  return 2;\n",
        "const a = 1;\nif (a) {\n  return 2;",
    ] {
        let outcome = eval(code).await;
        let error = failed(&outcome, ErrorKind::Syntax);
        let last = code.split('\n').count() as u32;
        let line = error.line.expect("a syntax error has a line");
        assert!(
            line <= last,
            "line {line} is past the code's {last} lines: {}",
            show(&outcome)
        );
    }
}

#[tokio::test]
async fn syntax_errors_run_nothing() {
    let outcome = crate::eval_with(
        "await codemode.echo({});\nconsole.log('ran');\nconst = 1;",
        &crate::opts(),
        &crate::basic_tools(),
    )
    .await;
    failed(&outcome, ErrorKind::Syntax);
    assert!(
        outcome.logs.is_empty() && outcome.tool_calls.is_empty(),
        "{}",
        show(&outcome)
    );
}

/// Code without `await` is compiled as a plain script (no promise, no jobs), code with it as an
/// async script. Appending ` // await` to the last line forces the async form without changing
/// the program: both must give the same outcome (result, error and its position, console output,
/// ledger), whatever the completion value is and whatever the script left queued.
const PLAIN_AND_ASYNC: &[&str] = &[
    "1 + 2",
    "",
    "undefined",
    // Numbers the guest encodes itself (exact integers, non-finite) and ones it leaves to
    // `JSON.stringify` (fractions, large and tiny magnitudes).
    "-0",
    "0 / 0",
    "-1 / 0",
    "2 ** 31",
    "-(2 ** 53) + 1",
    "2 ** 53",
    "1e21",
    "1e-7",
    "0.1 + 0.2",
    "-1.5",
    "null",
    "true",
    "!true",
    "'x'",
    "1n",
    "Symbol('s')",
    "let x = 1;",
    "({a: [1, 'x', null]})",
    "() => 5",
    "async () => 6",
    "function f() { return 7 }\nf",
    "class A {}\nA",
    "Promise.resolve(8)",
    "Promise.reject(new Error('nope'))",
    "Promise.reject(9)",
    "new Promise(() => {})",
    "({ then(r) { r(10) } })",
    "({ then(r, j) { j(new TypeError('thenable')) } })",
    "({ get then() { console.log('then read'); return undefined }, x: 1 })",
    "({ get then() { throw new Error('then getter') } })",
    "() => ({ then(r) { console.log('inner then'); r(11) } })",
    "() => { throw new RangeError('in a function') }",
    "throw new Error('top')",
    "const a = 1;\n\nthrow new Error('line 3')",
    "const a = 1;\nnull.x",
    "throw 'a string'",
    "throw {message: 'an object'}",
    "console.log('a', {b: 1}); console.error(new Error('e')); 5",
    "console.log('\\ud800'); ({s: '\\udc00x'})",
    "var aw\\u0061it = 5; aw\\u0061it",
    // Jobs queued by the script run in the same order relative to the result.
    "const p = Promise.resolve();\np.then(() => console.log(1)).then(() => console.log(2)).then(() => console.log(3));\n'done'",
    "const p = Promise.resolve();\np.then(() => console.log(1)).then(() => console.log(2)).then(() => console.log(3));\nthrow new Error('x')",
    "const p = Promise.resolve();\np.then(() => console.log(1)).then(() => console.log(2)).then(() => console.log(3));\n() => 'f'",
    "const p = Promise.resolve();\np.then(() => console.log(1)).then(() => console.log(2)).then(() => console.log(3));\nPromise.resolve('p')",
    "Promise.resolve().then(() => { throw new Error('in a job') }); 4",
    "Object.prototype.then = function (r) { r('adopted') }; 1",
    "Object.prototype.then = function (r) { r('adopted') }; ({a: 1})",
    "Promise.resolve = () => 'replaced'; () => 1",
    // Unawaited tool calls are still started and recorded.
    "codemode.echo({a: 1}); 'not waited for'",
    "codemode.echo({a: 1}); codemode.add({a: 1, b: 2}); codemode.fail({}); 'three'",
    "codemode.echo({a: 1});\nthrow new Error('after a call')",
    "codemode.add({a: 1, b: 2})",
    "codemode.fail({})",
    "codemode.deny({})",
    "codemode.nope({})",
    "codemode.echo({x: 1n})",
    "() => codemode.add({a: 2, b: 3}).then((r) => r * 2)",
    "codemode.then",
    "return codemode.add({a: 1, b: 1})",
    "const a = 1;\nreturn a + 1",
    // Top-level `return` (the async-function wrapper, called by the guest itself when there is
    // no `await`): primitives it encodes at once, everything else through the prelude's jobs.
    "return 1 + 1",
    "return",
    "if (1 > 0) return 'early';\nreturn 'late'",
    "return 1n",
    "return Symbol('s')",
    "return {a: [1, 'x', null]}",
    "return () => 5",
    "return Promise.resolve(8)",
    "return Promise.reject(new Error('nope'))",
    "return new Promise(() => {})",
    "return ({ then(r) { r(10) } })",
    "const a = 1;\nif (a) throw new Error('in the body');\nreturn a",
    "const a = 1;\nnull.x;\nreturn a",
    "return console.log('a', {b: 1})",
    "Promise.resolve().then(() => { throw new Error('in a job') }); return 4",
    "Object.prototype.then = function (r) { r('adopted') }; return 1",
    "Object.prototype.then = function (r) { r('adopted') }; return {a: 1}",
    "const then = Promise.prototype.then;\nPromise.prototype.then = function (...a) { console.log('then'); return then.apply(this, a) };\nreturn 1",
    "const then = Promise.prototype.then;\nPromise.prototype.then = function (...a) { console.log('then'); return then.apply(this, a) };\nreturn {a: 1}",
    "const then = Promise.prototype.then;\nObject.defineProperty(Promise.prototype, 'then', { get() { console.log('then read'); return then } });\nreturn 1",
    "const then = Promise.prototype.then;\nPromise.prototype.then = () => {};\nPromise.prototype.then = then;\nreturn 1",
    "Object.defineProperty(Promise.prototype, 'constructor', { get() { console.log('constructor read'); return Promise } });\nreturn 1",
    "Promise.prototype.constructor = undefined;\nreturn 1",
    "Object.defineProperty(Promise, Symbol.species, { get() { console.log('species read'); return Promise } });\nreturn 1",
    "codemode.echo({a: 1}); return 'not waited for'",
    "codemode.echo({a: 1});\nthrow new Error('after a call');\nreturn 1",
    // A chain the body queued, long enough to outlast the result's jobs: each step logs and
    // starts a call, so the ledger and the unawaited warnings show where the result came.
    "let p = Promise.resolve();\nfor (let i = 1; i <= 7; i++) p = p.then(() => { console.log(i); codemode.echo({i}) });\nreturn 'done'",
    "let p = Promise.resolve();\nfor (let i = 1; i <= 7; i++) p = p.then(() => { console.log(i); codemode.echo({i}) });\nreturn {done: true}",
    "let p = Promise.resolve();\nfor (let i = 1; i <= 7; i++) p = p.then(() => { console.log(i); codemode.echo({i}) });\nthrow new Error('x')\nreturn 1",
    "let p = Promise.resolve();\nfor (let i = 1; i <= 7; i++) p = p.then(() => { console.log(i); codemode.echo({i}) });\nreturn Promise.resolve('p')",
    // Results too large for the output limit, encoded where the async form encodes them (in
    // Rust, the copies could exhaust the linear memory first).
    "'a'.repeat(16000000)",
    "return 'a'.repeat(16000000)",
    "return 'a'.repeat(24000000)",
    "return String.fromCharCode(256).repeat(8000000)",
    // An async script's completion record gets its `value` defined (as the plain form's
    // record in the prelude): what the script put on `Object.prototype` is not reached.
    "Object.defineProperty(Object.prototype, 'value', { get() { console.log('value read') }, set(v) { console.log('value set') }, configurable: true }); 1",
    "Object.defineProperty(Object.prototype, 'value', { value: 0 }); 1",
    "Object.defineProperty(Object.prototype, 'value', { value: 0 }); ({a: 1})",
    "Object.defineProperty(Object.prototype, 'value', { set(v) { throw new Error('no value') } }); () => 2",
    "return 1\n}\nObject.defineProperty(Object.prototype, 'value', { get() { console.log('value read') }, set(v) { console.log('value set') }, configurable: true });\n{",
    // The frames below the script's code in a stack it reads.
    "() => new Error('x').stack",
    "return new Error('x').stack",
    "try { null.x } catch (e) { return e.stack }",
    "function f() { return new Error('deep').stack }\nreturn {a: f()}",
    // Code that closes the wrapper's body early runs at the top level, before the wrapper is
    // called, and can replace the completion value the wrapper's call is taken from.
    "return 1\n}\ncodemode_main = 5;\n{",
    "return 1\n}\ncodemode_main = undefined;\n{",
    "return 1\n}\ncodemode_main = () => 'not async';\n{",
    "return 1\n}\ncodemode_main = () => { const p = Promise.resolve(1); p.then = function (r) { console.log('own then'); r(2) }; return p };\n{",
    "return 1\n}\nclass P extends Promise { constructor(e) { console.log('new P'); super(e) } }\ncodemode_main = () => P.resolve(1);\n{",
    "return 1\n}\ncodemode_main = new Proxy(async () => 1, { apply() { console.log('trap'); return 3 } });\n{",
    "return 1\n}\ncodemode_main = async function () { return typeof this };\n{",
    "console.log('body'); return 1\n}\nPromise.resolve().then(() => console.log('queued at the top level'));\n{",
    "return 1\n}\nObject.defineProperty(Object.prototype, 'then', { get() { console.log('then read'); return undefined }, configurable: true });\n{",
    "return 1\n}\nlet p = Promise.resolve();\nfor (let i = 1; i <= 7; i++) p = p.then(() => { console.log(i); codemode.echo({i}) });\nthrow new Error('at the top level');\n{",
    "return 1\n}\nlet p = Promise.resolve();\nfor (let i = 1; i <= 7; i++) p = p.then(() => { console.log(i); codemode.echo({i}) });\ncodemode_main = () => { throw new Error('sync') };\n{",
    "const a = 1;\nconst b = ;",
    "1 +",
];

/// The outcome without its timings.
fn comparable(outcome: &codemode_runtime::EvalOutcome) -> Value {
    let mut v = serde_json::to_value(outcome).unwrap();
    v.as_object_mut().unwrap().remove("stats");
    for call in v["tool_calls"].as_array_mut().unwrap() {
        call.as_object_mut().unwrap().remove("duration_ms");
    }
    v
}

#[tokio::test]
async fn code_without_await_behaves_as_an_async_script() {
    let tools = crate::basic_tools();
    for code in PLAIN_AND_ASYNC {
        assert!(!code.contains("await"), "{code:?} must have no await");
        let plain = crate::eval_with(code, &crate::opts(), &tools).await;
        let forced = format!("{code} // await");
        let as_async = crate::eval_with(&forced, &crate::opts(), &tools).await;
        assert_eq!(
            comparable(&plain),
            comparable(&as_async),
            "{code:?}: {}",
            show(&plain)
        );
    }
}

/// The deepest recursion `code` (with `N` for the depth) runs without overflowing the stack,
/// with `suffix` appended.
async fn deepest(code: &str, suffix: &str) -> u32 {
    let tools = crate::basic_tools();
    let (mut ok, mut overflows) = (1u32, 1u32 << 17);
    while ok + 1 < overflows {
        let depth = ok + (overflows - ok) / 2;
        let code = format!("{}{suffix}", code.replace('N', &depth.to_string()));
        let outcome = crate::eval_with(&code, &crate::opts(), &tools).await;
        if outcome.ok {
            ok = depth;
        } else {
            failed(&outcome, ErrorKind::StackOverflow);
            overflows = depth;
        }
    }
    ok
}

/// Code with top-level `return` runs its body on the stack the async form runs it on: the guest
/// calls the wrapper through the frames the prelude calls it through, so the same recursion
/// fits (on 4d5b16c, two more levels did without `await`).
#[tokio::test]
async fn the_body_has_the_same_stack_in_both_forms() {
    let code = "function f(n) { return n ? f(n - 1) + 1 : 0 }\nreturn f(N)";
    let (plain, as_async) = (deepest(code, "").await, deepest(code, " // await").await);
    assert!(plain > 100, "{plain}");
    assert_eq!(plain, as_async);
}

#[tokio::test]
async fn code_without_await_keeps_its_outcomes() {
    let (tools, options) = (crate::basic_tools(), crate::opts());
    let run = |code: &'static str| crate::eval_with(code, &options, &tools);
    // Completion values: a function is called, a thenable adopted, an object or a primitive kept.
    assert_eq!(crate::ok(&run("() => 41 + 1").await), &json!(42));
    assert_eq!(
        crate::ok(&run("({ then(resolve) { resolve('adopted') } })").await),
        &json!("adopted")
    );
    assert_eq!(crate::ok(&run("({a: 1})").await), &json!({"a": 1}));
    assert_eq!(crate::ok(&run("'text'").await), &json!("text"));
    // `await` only inside a string: the async form, same result.
    assert_eq!(
        crate::ok(&run("const s = \"await\";\ns").await),
        &json!("await")
    );
    // A synchronous throw points at its line.
    let outcome = run("const a = 1;\n\n  throw new TypeError('sync');").await;
    let error = failed(&outcome, ErrorKind::Exception);
    assert_eq!(
        (error.line, error.column),
        (Some(3), Some(13)),
        "{}",
        show(&outcome)
    );
    assert_eq!(error.message, "TypeError: sync");
    // An unawaited tool call is started and recorded; the script's value is the result.
    let outcome = run("codemode.echo({n: 1});\n'not waiting'").await;
    assert_eq!(crate::ok(&outcome), &json!("not waiting"));
    assert_eq!(outcome.tool_calls.len(), 1, "{}", show(&outcome));
    assert_eq!(outcome.tool_calls[0].tool, "echo");
    // Jobs the script queued still run, before the result.
    let outcome = run("Promise.resolve().then(() => console.log('job'));\n1").await;
    assert_eq!(crate::ok(&outcome), &json!(1));
    assert_eq!(outcome.logs.len(), 1, "{}", show(&outcome));
    assert_eq!(outcome.logs[0].message, "job");
}

/// Functions keep the `length` and `name` properties the language gives them (the guest's
/// QuickJS patch adds them to new functions without the generic definition): values, flags and
/// order, for closures, native functions and a promise's resolving functions.
#[tokio::test]
async fn functions_have_their_length_and_name() {
    let code = r#"
const describe = (f) => Object.getOwnPropertyNames(f).map((key) => {
  const d = Object.getOwnPropertyDescriptor(f, key);
  return [key, typeof d.value === 'object' ? typeof d.value : d.value, d.writable, d.enumerable, d.configurable];
});
let resolve;
new Promise((res) => { resolve = res; });
function named(a, b, ...rest) {}
const renamed = named.bind(null, 1);
delete resolve.name;
return {
  named: describe(named).filter(([key]) => key === 'length' || key === 'name'),
  arrow: describe((x) => x),
  resolve: describe(resolve),
  native: [Math.max.length, Math.max.name, renamed.length, renamed.name],
};
"#;
    let outcome = eval(code).await;
    assert_eq!(
        *crate::ok(&outcome),
        json!({
            "named": [["length", 2, false, false, true], ["name", "named", false, false, true]],
            "arrow": [["length", 1, false, false, true], ["name", "", false, false, true]],
            "resolve": [["length", 1, false, false, true]],
            "native": [2, "max", 1, "bound named"],
        }),
        "{}",
        show(&outcome)
    );
}
