//! Forged host calls from a script: whatever a script hands `codemode.<name>(…)` — functions,
//! symbols, lone surrogates, exotic objects, extra arguments — crosses the host-call ABI as a
//! catchable rejection or well-formed JSON, never as a host failure. (Hand-written guest modules
//! misusing the ABI itself are in tests/sandbox/abi.rs.)

use serde_json::json;

use crate::harness::{Case, Expect::*, Probe, case, run_table};

/// The script made no tool call (JS looking up its own protocol names is not a call).
fn no_calls(p: &Probe<'_>) -> Result<(), String> {
    match p.outcome.tool_calls.as_slice() {
        [] => Ok(()),
        calls => Err(format!(
            "phantom calls in the ledger: {:?}",
            calls.iter().map(|c| c.tool.as_str()).collect::<Vec<_>>()
        )),
    }
}

/// A call to the allowed `fs__list_allowed_directories` with `args`; returns what happened.
fn call(name: &'static str, args: &str) -> Case {
    let script = format!(
        "try {{ const r = await codemode.fs__list_allowed_directories({args}); return typeof r; }} catch (e) {{ return e.name }}"
    );
    case(name, script, Contained)
}

fn cases() -> Vec<Case> {
    vec![
        call("a function as the arguments", "function () {}"),
        call("a symbol as the arguments", "Symbol('x')"),
        call("a string as the arguments", "'{\"path\": \"/etc\"}'"),
        call("an array as the arguments", "[1, 2, 3]"),
        call("null as the arguments", "null"),
        call("NaN and Infinity inside", "{ a: NaN, b: Infinity, c: -0 }"),
        call("a lone surrogate in a value", "{ a: '\\ud800' }"),
        call("a lone surrogate in a key", "{ ['\\udfff']: 1 }"),
        call(
            "a __proto__ key",
            "JSON.parse('{\"__proto__\": {\"polluted\": true}}')",
        ),
        call(
            "a Map, a Set, a Date and a RegExp",
            "{ m: new Map([[1, 2]]), s: new Set([1]), d: new Date(0), r: /x/g }",
        ),
        call("a typed array", "{ bytes: new Uint8Array(1 << 16) }"),
        call(
            "an object with 100,000 keys",
            "Object.fromEntries(Array.from({ length: 100000 }, (_, i) => ['k' + i, i]))",
        ),
        call("extra arguments", "{}, 1, 2, 3"),
        call(
            "an arguments object that throws in toJSON",
            "{ toJSON() { throw new Error('no') } }",
        ),
        case(
            "a lone surrogate in the tool name",
            "try { await codemode['fs__\\ud800']({}); return 'ran' } catch (e) { return e.name }",
            Contained,
        ),
        case(
            "a tool name that is a number",
            "try { await codemode[42]({}); return 'ran' } catch (e) { return e.name }",
            Contained,
        ),
        case(
            "the empty tool name",
            "try { await codemode['']({}); return 'ran' } catch (e) { return e.name }",
            Contained,
        ),
        case(
            "a call function detached and stored",
            "const f = codemode.fs__list_allowed_directories; globalThis.g = f; return typeof await g({})",
            Contained,
        ),
        case(
            "calling codemode itself",
            "try { codemode(); return 'ran' } catch (e) { return e.name }",
            Contained,
        ),
        case(
            "new on a tool function",
            "try { new codemode.fs__list_allowed_directories({}); return 'ran' } catch (e) { return e.name }",
            Contained,
        ),
        case(
            "defining a property on codemode",
            "try { Object.defineProperty(codemode, 'fs__move_file', { value: () => 1 }); } catch (e) {} try { await codemode.fs__move_file({}); return 'ran' } catch (e) { return e.name }",
            Contained,
        ),
        case(
            "the prototype of codemode",
            "try { Object.setPrototypeOf(codemode, { fs__move_file: () => 1 }); } catch (e) {} try { await codemode.fs__move_file({}); return 'ran' } catch (e) { return e.name }",
            Contained,
        ),
        case(
            "String(codemode) is not a tool call",
            "return typeof String(codemode)",
            Returns(json!("string")),
        )
        .checked(no_calls),
        case(
            "JSON.stringify(codemode) is not a tool call",
            "JSON.stringify(codemode); JSON.stringify({ c: codemode }); return 1",
            Returns(json!(1)),
        )
        .checked(no_calls),
        case(
            "console.log(codemode) is not a tool call",
            "console.log(codemode); console.log(`${codemode}`); return 1",
            Returns(json!(1)),
        )
        .checked(no_calls),
        case(
            "awaiting codemode itself is not a tool call",
            "const c = await codemode; return typeof c",
            AnyResult,
        )
        .checked(no_calls),
        case(
            "coercing codemode is not a tool call",
            "try { codemode + 1; +codemode; codemode == 1; } catch (e) {} return 1",
            Returns(json!(1)),
        )
        .checked(no_calls),
        case(
            "a result settled twice",
            "const p = codemode.fs__list_allowed_directories({}); const a = await p; const b = await p; return a === b",
            Contained,
        ),
    ]
}

#[test]
fn forged_host_calls() {
    run_table("abi", cases());
}
