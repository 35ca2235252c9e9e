use serde_json::json;

use super::extract::extract_on_this_thread;
use super::*;

/// `(tool, line, column)`; tool `None` means a dynamic entry.
type Site = (Option<&'static str>, u32, u32);

fn sites(code: &str) -> Vec<Site> {
    let p = extract_tool_calls(code);
    assert_eq!(p.parse_error, None, "{code}");
    p.calls
        .iter()
        .map(|c| {
            assert_eq!(c.dynamic, c.tool.is_none());
            let tool: Option<&'static str> =
                c.tool.clone().map(|t| &*Box::leak(t.into_boxed_str()));
            (tool, c.line, c.column)
        })
        .collect()
}

const D: Option<&str> = None;

#[test]
fn call_sites() {
    let cases: &[(&str, &[Site])] = &[
        // plain, bracketed and template keys
        ("codemode.a()", &[(Some("a"), 1, 1)]),
        (
            "await codemode.gh__search({q: 1})",
            &[(Some("gh__search"), 1, 7)],
        ),
        ("codemode[\"gh__x-y\"]()", &[(Some("gh__x-y"), 1, 1)]),
        ("codemode['a b']()", &[(Some("a b"), 1, 1)]),
        ("codemode[`t__x`]()", &[(Some("t__x"), 1, 1)]),
        // optional calls and parentheses
        ("codemode.x?.()", &[(Some("x"), 1, 1)]),
        ("codemode?.x()", &[(Some("x"), 1, 1)]),
        ("codemode?.[\"x\"]?.()", &[(Some("x"), 1, 1)]),
        ("(codemode).x()", &[(Some("x"), 1, 1)]),
        ("(codemode.x)()", &[(Some("x"), 1, 1)]),
        ("(codemode?.x)()", &[(Some("x"), 1, 1)]),
        // nested calls inside arguments, in source order
        (
            "codemode.a(await codemode.b(), [codemode.c()], {k: codemode.d()})",
            &[
                (Some("a"), 1, 1),
                (Some("b"), 1, 18),
                (Some("c"), 1, 33),
                (Some("d"), 1, 52),
            ],
        ),
        ("foo(codemode.x())", &[(Some("x"), 1, 5)]),
        // computed keys: dynamic; calls inside the key are found
        ("codemode[k]()", &[(D, 1, 1)]),
        ("codemode[`${k}`]()", &[(D, 1, 1)]),
        ("codemode['a' + b]()", &[(D, 1, 1)]),
        (
            "codemode[await codemode.pick()]()",
            &[(D, 1, 1), (Some("pick"), 1, 16)],
        ),
        // destructuring
        ("const { x } = codemode;\nawait x(1);", &[(Some("x"), 2, 7)]),
        (
            "const { x: y } = codemode; y(); x();",
            &[(Some("x"), 1, 28)],
        ),
        (
            "const { 'a-b': f, c = null } = codemode; f(); c();",
            &[(Some("a-b"), 1, 42), (Some("c"), 1, 47)],
        ),
        ("const { [k]: f } = codemode; f();", &[(D, 1, 9)]),
        (
            "const { x } = codemode; function g() { return x(); }",
            &[(Some("x"), 1, 47)],
        ),
        (
            "const { x } = codemode; list.map(x);",
            &[(Some("x"), 1, 34)],
        ),
        // rest element: another alias of the object
        (
            "const { a, ...rest } = codemode; rest.b();",
            &[(D, 1, 12), (Some("b"), 1, 34)],
        ),
        // a member bound to a name
        (
            "const f = codemode.search; await f({});",
            &[(Some("search"), 1, 34)],
        ),
        ("const f = codemode['s']; f();", &[(Some("s"), 1, 26)]),
        ("const f = codemode[k]; f();", &[(D, 1, 11)]),
        // aliasing the object: one dynamic entry where it escapes, calls through it by name
        (
            "const c = codemode;\nc.x();\nc[k]();",
            &[(D, 1, 11), (Some("x"), 2, 1), (D, 3, 1)],
        ),
        ("let c; c = codemode; c.x();", &[(D, 1, 12)]),
        ("helper(codemode)", &[(D, 1, 8)]),
        ("const o = { codemode };", &[(D, 1, 13)]),
        // references that are not direct calls
        ("items.map(codemode.fetch)", &[(Some("fetch"), 1, 11)]),
        ("codemode.x.call(null, 1)", &[(Some("x"), 1, 1)]),
        // not the codemode object
        ("other.codemode.x(); x(); codemode2.y();", &[]),
        ("const s = 'codemode.x()'; // codemode.y()", &[]),
        // shadowing (best effort)
        (
            "function f(codemode) { return codemode.x(); }\ncodemode.y();",
            &[(Some("y"), 2, 1)],
        ),
        ("(codemode) => codemode.x()", &[]),
        (
            "{ const codemode = fake; codemode.x(); }\ncodemode.y();",
            &[(Some("y"), 2, 1)],
        ),
        ("try {} catch (codemode) { codemode.x(); }", &[]),
        ("function codemode() {}\ncodemode.x();", &[]),
        (
            "const { x } = codemode; function g(x) { x(); } x();",
            &[(Some("x"), 1, 48)],
        ),
        ("for (const codemode of list) codemode.x();", &[]),
    ];
    for (code, want) in cases {
        assert_eq!(sites(code), *want, "{code}");
    }
}

#[test]
fn script_bodies_and_async_arrows_both_parse() {
    let cases: &[(&str, &[Site])] = &[
        (
            "const r = await codemode.a();\nreturn r;",
            &[(Some("a"), 1, 17)],
        ),
        (
            "async () => {\n  const r = await codemode.a();\n  return r;\n}",
            &[(Some("a"), 2, 19)],
        ),
        ("async () => codemode.a()", &[(Some("a"), 1, 13)]),
        (
            "return await Promise.all([1, 2].map(i => codemode.b({ i })));",
            &[(Some("b"), 1, 42)],
        ),
        (
            "for await (const x of y) { codemode.c(x) }",
            &[(Some("c"), 1, 28)],
        ),
        // columns count characters, not bytes
        ("const é = '€'; codemode.x()", &[(Some("x"), 1, 16)]),
        ("\r\n\r\n  codemode.x()", &[(Some("x"), 3, 3)]),
    ];
    for (code, want) in cases {
        assert_eq!(sites(code), *want, "{code}");
    }
}

#[test]
fn syntax_errors() {
    let cases: &[(&str, &str, u32, u32)] = &[
        ("codemode.a(", "Expected `)` but found `EOF`", 1, 12),
        ("const x = 1;\nconst = 2;", "", 2, 7),
        ("let a = 'é';\n  a b", "", 2, 4),
    ];
    for (code, message, line, column) in cases {
        let p = extract_tool_calls(code);
        let err = p
            .parse_error
            .unwrap_or_else(|| panic!("no error for {code}"));
        assert!(err.message.contains(message), "{code}: {err:?}");
        assert!(!err.message.is_empty());
        assert_eq!((err.line, err.column), (*line, *column), "{code}: {err:?}");
    }
}

#[test]
fn serialises_to_the_documented_shape() {
    let p = extract_tool_calls("codemode.a();\ncodemode[k]()");
    assert_eq!(p.tools(), ["a"]);
    assert!(p.has_dynamic());
    assert_eq!(
        serde_json::to_value(&p).unwrap(),
        json!({"calls": [
            {"tool": "a", "line": 1, "column": 1, "dynamic": false},
            {"tool": null, "line": 2, "column": 1, "dynamic": true}
        ], "parse_error": null})
    );
    let p = extract_tool_calls("codemode.a(");
    let v = serde_json::to_value(&p).unwrap();
    assert_eq!(v["parse_error"]["line"], 1);
    assert!(v["parse_error"]["message"].is_string());
    assert_eq!(v.as_object().unwrap().len(), 2);
    let back: Preview = serde_json::from_value(v).unwrap();
    assert_eq!(back, p);
}

#[test]
fn deep_nesting_and_large_scripts_do_not_crash() {
    // Generated code can nest deeply; the parser and the visitor recurse, on their own thread
    // with a large stack. Callers' threads have small stacks (tokio's workers: 2 MiB).
    let small_stack = |code: String| {
        std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || extract_tool_calls(&code))
            .unwrap()
            .join()
            .unwrap()
    };
    let nestings: &[(&str, &str)] = &[
        ("(", ")"),
        ("[", "]"),
        ("!", ""),
        ("- ", ""),
        ("f(", ")"),
        ("{a:", "}"),
        ("a?b:", ""),
        ("x=>", ""),
        ("`${", "}`"),
        ("if(a)", ""),
        ("{", "}"),
    ];
    for (open, close) in nestings {
        let depth = (MAX_PREVIEW_CODE_BYTES - 20) / (open.len() + close.len());
        let p = small_stack(format!(
            "{}codemode.x(){}",
            open.repeat(depth),
            close.repeat(depth)
        ));
        assert_eq!((p.tools(), &p.parse_error), (vec!["x"], &None), "{open}");
    }
    let big = format!("codemode.x();{}", " ".repeat(MAX_PREVIEW_CODE_BYTES));
    let p = extract_tool_calls(&big);
    assert!(p.calls.is_empty());
    let err = p.parse_error.unwrap();
    assert!(
        err.message.contains("too large to preview"),
        "{}",
        err.message
    );
    assert_eq!((err.line, err.column), (1, 1));
}

#[test]
fn small_scripts_parse_on_the_calling_thread_at_any_nesting() {
    // Up to ON_THIS_THREAD_BYTES the parse runs on the caller's thread: the deepest nesting
    // that fits in that many bytes must parse there with half a default thread stack (1 MiB).
    let half_stack = |code: String| {
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || {
                let preview = extract_tool_calls(&code);
                let normalized = crate::normalize_with_preview(&code).map(|(s, p)| (s.len(), p));
                (preview, normalized)
            })
            .unwrap()
            .join()
            .unwrap()
    };
    let nestings: &[(&str, &str)] = &[
        ("(", ")"),
        ("[", "]"),
        ("!", ""),
        ("- ", ""),
        ("f(", ")"),
        ("{a:", "}"),
        ("a?b:", ""),
        ("x=>", ""),
        ("`${", "}`"),
        ("if(a)", ""),
        ("{", "}"),
    ];
    for (open, close) in nestings {
        let depth = (ON_THIS_THREAD_BYTES - 12) / (open.len() + close.len());
        let code = format!("{}codemode.x(){}", open.repeat(depth), close.repeat(depth));
        assert!(code.len() <= ON_THIS_THREAD_BYTES, "{open}");
        let (preview, normalized) = half_stack(code.clone());
        assert_eq!(
            (preview.tools(), &preview.parse_error),
            (vec!["x"], &None),
            "{open}"
        );
        let (len, from_normalize) = normalized.unwrap();
        assert_eq!((len, from_normalize), (code.len(), preview), "{open}");
    }
}

#[test]
fn deep_scripts_up_to_the_retiring_size_parse_on_one_kept_thread() {
    // Longer than ON_THIS_THREAD_BYTES, at most RETIRE_AFTER_BYTES: parsed on a kept thread,
    // which must survive the deepest nesting of that size and serve the next parse.
    let kept = super::threads::new_parse_threads();
    let nestings: &[(&str, &str)] = &[
        ("(", ")"),
        ("[", "]"),
        ("!", ""),
        ("f(", ")"),
        ("{a:", "}"),
        ("a?b:", ""),
        ("x=>", ""),
        ("`${", "}`"),
        ("{", "}"),
    ];
    for (open, close) in nestings {
        let depth = (super::threads::RETIRE_AFTER_BYTES - 12) / (open.len() + close.len());
        let code = format!("{}codemode.x(){}", open.repeat(depth), close.repeat(depth));
        assert!(code.len() > ON_THIS_THREAD_BYTES);
        assert!(code.len() <= super::threads::RETIRE_AFTER_BYTES, "{open}");
        let on_kept = {
            let code = code.clone();
            kept.run(move || extract_on_this_thread(&code))
                .unwrap()
                .unwrap()
        };
        assert_eq!(
            (on_kept.tools(), &on_kept.parse_error),
            (vec!["x"], &None),
            "{open}"
        );
        // The same through the public API, from a thread with a small stack.
        let public = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || extract_tool_calls(&code))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(public, on_kept, "{open}");
    }
    assert_eq!((kept.started(), kept.idle()), (1, 1));
}

/// Code run from a string (`eval`, `Function`, a function's `constructor`) and `codemode`
/// reached through the global object under a computed name make dynamic entries; `codemode`
/// read off the global object by its own name is the object.
#[test]
fn code_from_strings_and_the_global_object_are_dynamic() {
    let cases: &[(&str, &[Site])] = &[
        ("eval('codemode.x()')", &[(D, 1, 1)]),
        ("await eval(s)", &[(D, 1, 7)]),
        ("(0, eval)(s)", &[(D, 1, 5)]),
        ("new Function(s)()", &[(D, 1, 5)]),
        ("Function(s)()", &[(D, 1, 1)]),
        ("globalThis.eval(s)", &[(D, 1, 1)]),
        ("globalThis['Function'](s)", &[(D, 1, 1)]),
        ("[].map.constructor(s)()", &[(D, 1, 1)]),
        ("(async () => {})['constructor'](s)", &[(D, 1, 1)]),
        ("globalThis[\"code\" + \"mode\"].x()", &[(D, 1, 1)]),
        ("self[k]()", &[(D, 1, 1)]),
        ("this[`code${m}`].x()", &[(D, 1, 1)]),
        ("const g = globalThis; g[k]()", &[(D, 1, 11)]),
        ("Reflect.get(globalThis, k)", &[(D, 1, 13)]),
        ("const c = globalThis.codemode", &[(D, 1, 11)]),
        // `codemode` by its own name on the global object
        ("globalThis.codemode.x()", &[(Some("x"), 1, 1)]),
        ("globalThis['codemode']['y']()", &[(Some("y"), 1, 1)]),
        ("this.codemode.x()", &[(Some("x"), 1, 1)]),
        (
            "const { z } = globalThis.codemode; z()",
            &[(Some("z"), 1, 36)],
        ),
        // other globals, and shadowed names, are no call sites
        ("globalThis.JSON.stringify(1); JSON.parse('1')", &[]),
        ("const globalThis = {}; globalThis[k]", &[]),
        ("function f(window) { return window[k] }", &[]),
        ("const eval2 = (s) => s; eval2('x')", &[]),
    ];
    for (code, want) in cases {
        assert_eq!(sites(code), *want, "{code}");
    }
}
