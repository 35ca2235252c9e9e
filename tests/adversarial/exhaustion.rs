//! Resource exhaustion: every limit ends the eval with its own kind, frees the instance, and the
//! next eval runs.

use codemode_runtime::ErrorKind::*;
use codemode_runtime::EvalOptions;
use serde_json::json;

use crate::harness::{Case, Expect::*, Fixture, case, run_table};

/// The fixture's options with fuel off: only the wall clock can stop a busy loop.
fn no_fuel() -> EvalOptions {
    let mut o = Fixture::options();
    o.fuel(None)
        .timeout(Some(std::time::Duration::from_millis(500)));
    o
}

/// The fixture's options with the default 64 MiB of memory: room for arguments over the 8 MiB
/// limit and their JSON.
fn roomy() -> EvalOptions {
    let mut o = Fixture::options();
    o.memory(64 << 20);
    o
}

fn cases() -> Vec<Case> {
    vec![
        case("busy loop runs out of fuel", "for (;;) {}", Kind(OutOfFuel)),
        case(
            "busy loop without fuel times out",
            "for (;;) {}",
            Kind(Timeout),
        )
        .with_options(no_fuel()),
        case(
            "a loop inside a catch-all still ends",
            "for (;;) { try { for (;;) {} } catch (e) {} }",
            Kind(OutOfFuel),
        ),
        case(
            "a loop in finally still ends",
            "try { throw 1 } finally { for (;;) {} }",
            Kind(OutOfFuel),
        ),
        case(
            "memory: an ever-growing array",
            "const a = []; for (;;) a.push(new Array(1e5).fill(1));",
            Kind(MemoryLimit),
        ),
        case(
            "memory: string doubling (QuickJS caps a string's length)",
            "let s = 'x'; for (;;) s += s;",
            Kind(Exception),
        ),
        case(
            "memory: ever more long strings",
            "const a = []; const s = 'x'.repeat(1 << 20); for (;;) a.push(s + a.length);",
            Kind(MemoryLimit),
        ),
        case(
            "memory: a huge typed array",
            "return new Uint8Array(1 << 30).length",
            Kind(MemoryLimit),
        ),
        case(
            "memory: typed-array flood",
            "const a = []; for (;;) a.push(new Float64Array(1 << 20));",
            Kind(MemoryLimit),
        ),
        case(
            "memory error caught and retried",
            "for (let i = 0; i < 50; i++) { try { let s = 'x'; for (;;) s += s; } catch (e) {} } return 1",
            Contained,
        ),
        case(
            "deep recursion",
            "const f = (n) => f(n + 1) + 1; return f(0)",
            Kind(StackOverflow),
        ),
        case(
            "deep recursion caught then rethrown deeper",
            "const f = (n) => { try { return f(n + 1); } catch (e) { return f(n + 1); } }; return f(0)",
            Contained,
        ),
        case(
            "catastrophic regex backtracking",
            "return /^(a+)+$/.test('a'.repeat(40) + 'b')",
            Kind(OutOfFuel),
        ),
        case(
            "BigInt power",
            "return String(10n ** 10000000n).length",
            Contained,
        ),
        case(
            "million-deep JSON parse",
            "return JSON.parse('['.repeat(1e6) + ']'.repeat(1e6)).length",
            Contained,
        ),
        case(
            "million-deep array as the result",
            "let a = []; for (let i = 0; i < 1e6; i++) a = [a]; return a",
            Contained,
        ),
        case(
            "million-deep arguments to a tool",
            "let a = {}; for (let i = 0; i < 1e6; i++) a = {a}; try { await codemode.fs__read_text_file(a); } catch (e) { return e.name } return 'sent'",
            Contained,
        ),
        case(
            "log flood hits the output limit",
            "for (;;) console.log('x'.repeat(1000));",
            Kind(OutputLimit),
        ),
        case(
            "one huge log line",
            "console.log('x'.repeat(10 << 20)); return 1",
            Contained,
        ),
        case("a huge result", "return 'x'.repeat(4 << 20)", Contained),
        case(
            "tool call flood hits the call limit",
            "for (;;) await codemode.fs__list_allowed_directories({});",
            Kind(ToolLimit),
        ),
        case(
            "unawaited tool call flood",
            "for (let i = 0; i < 10000; i++) codemode.fs__list_allowed_directories({}); return 1",
            Kind(ToolLimit),
        ),
        case(
            "promise job flood",
            "let p = Promise.resolve(); for (;;) p = p.then(() => {});",
            Contained,
        ),
        case(
            "microtask recursion",
            "const f = () => Promise.resolve().then(f); f(); await new Promise(() => {});",
            Contained,
        ),
        case(
            "a promise that never settles",
            "await new Promise(() => {}); return 1",
            Contained,
        ),
        case(
            "a huge tool name is a catchable rejection",
            "try { await codemode['a'.repeat(100000)](); } catch (e) { return e.name } return 'called'",
            AnyResult,
        ),
        case(
            "arguments over the limit are a catchable rejection",
            "try { await codemode.fs__read_text_file({ path: 'x'.repeat(9 << 20) }); } catch (e) { return e.name } return 'sent'",
            AnyResult,
        )
        .with_options(roomy()),
        case(
            "search_tools with a 500 KB query, six times",
            "const q = 'echo '.repeat(1e5); let n = 0; for (let i = 0; i < 6; i++) await codemode.search_tools({ query: q }).catch(() => n++); return n",
            Returns(json!(6)),
        ),
        case(
            "get_tools with 100,000 names",
            "try { await codemode.get_tools({ names: Array.from({ length: 100000 }, (_, i) => 'fs__' + i) }); return 'answered' } catch (e) { return e.name }",
            Returns(json!("ToolError")),
        ),
        case(
            "sort with a comparator that lies",
            "return [3,1,2,5,4].sort(() => Math.random() - 0.5).length",
            Returns(json!(5)),
        ),
        case(
            "array of length 2^32-1",
            "return new Array(2 ** 32 - 1).length",
            Returns(json!(4294967295_u64)),
        ),
        case(
            "filling 2^32-1 elements",
            "return new Array(2 ** 32 - 1).fill(0).length",
            Contained,
        ),
    ]
}

#[test]
fn resource_exhaustion() {
    run_table("exhaustion", cases());
}
