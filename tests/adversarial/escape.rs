//! Sandbox escape: reaching the host's files, processes, network, environment or memory from a
//! script, and tampering with the machinery that carries tool calls.

use codemode_runtime::ErrorKind::*;
use serde_json::json;

use crate::harness::{Case, Expect::*, case, run_table};

fn cases() -> Vec<Case> {
    vec![
        case(
            "require is not defined",
            "return typeof require",
            Returns(json!("undefined")),
        ),
        case(
            "process is not defined",
            "return typeof process",
            Returns(json!("undefined")),
        ),
        case(
            "no Node, Deno or Bun globals",
            "return [typeof Deno, typeof Bun, typeof Buffer, typeof global]",
            Returns(json!(["undefined", "undefined", "undefined", "undefined"])),
        ),
        case(
            "no QuickJS std/os modules",
            "return [typeof std, typeof os, typeof scriptArgs, typeof print]",
            Returns(json!(["undefined", "undefined", "undefined", "undefined"])),
        ),
        case(
            "dynamic import of fs rejects",
            "await import('fs'); return 1",
            Kind(Exception),
        ),
        case(
            "dynamic import of a file path rejects",
            "await import('/etc/passwd'); return 1",
            Kind(Exception),
        ),
        case(
            "no network objects",
            "return [typeof fetch, typeof XMLHttpRequest, typeof WebSocket, typeof navigator]",
            Returns(json!(["undefined", "undefined", "undefined", "undefined"])),
        ),
        case(
            "no WebAssembly to compile host code",
            "return typeof WebAssembly",
            Returns(json!("undefined")),
        ),
        case(
            "no shared memory or atomics wait",
            "return [typeof SharedArrayBuffer, typeof Atomics === 'object' ? typeof Atomics.wait : 'none']",
            Contained,
        ),
        case(
            "Function constructor reaches only the sandbox's global",
            "const g = Function('return this')(); return typeof g.codemode",
            Returns(json!("object")),
        ),
        case(
            "indirect eval is still the sandbox",
            "return (0, eval)('typeof require')",
            Returns(json!("undefined")),
        ),
        case(
            "codemode cannot be replaced",
            "try { globalThis.codemode = {x: 1}; } catch (e) {} return typeof codemode.fs__read_text_file",
            Returns(json!("function")),
        ),
        case(
            "Object.prototype.then poisoning",
            "Object.prototype.then = (r) => r(42); const x = await codemode.fs__list_allowed_directories({}); delete Object.prototype.then; return typeof x",
            Contained,
        ),
        case(
            "Promise.prototype.then replaced before a call",
            "Promise.prototype.then = function () { return 7; }; return 1",
            Contained,
        ),
        case(
            "JSON.stringify replaced before a call",
            "JSON.stringify = () => '{\"path\":\"/etc/passwd\"}'; const r = await codemode.fs__list_allowed_directories({}); return typeof r",
            Contained,
        ),
        case(
            "JSON.parse replaced before a result",
            "JSON.parse = () => ({forged: true}); const r = await codemode.fs__list_allowed_directories({}); return r.forged === true",
            Contained,
        ),
        case(
            "a getter in the arguments runs once, in the sandbox",
            "let n = 0; const args = { get path() { n++; return 'public/x.txt'; }, content: 'x' }; await codemode.fs__write_file(args).catch(() => {}); return n <= 2",
            Returns(json!(true)),
        ),
        case(
            "a Proxy as arguments",
            "const p = new Proxy({}, { get: () => '../protected/p.txt', ownKeys: () => ['path', 'content'], getOwnPropertyDescriptor: () => ({ value: '../protected/p.txt', enumerable: true, configurable: true }) }); await codemode.fs__write_file(p).catch(() => {}); return 1",
            Contained,
        ),
        case(
            "toJSON in the arguments cannot change the tool",
            "const a = { toJSON() { return { path: 'x' }; } }; await codemode.fs__move_file(a).catch(e => e.name); return 1",
            Returns(json!(1)),
        ),
        case(
            "a throwing getter in the arguments",
            "const a = { get path() { throw new Error('boom'); } }; try { await codemode.fs__read_text_file(a); } catch (e) { return e.message } ",
            Contained,
        ),
        case(
            "cyclic arguments",
            "const a = {}; a.self = a; try { await codemode.fs__read_text_file(a); return 'sent'; } catch (e) { return e.name }",
            Contained,
        ),
        case(
            "BigInt in arguments",
            "try { await codemode.fs__read_text_file({ path: 1n }); return 'sent'; } catch (e) { return e.name }",
            Contained,
        ),
        case(
            "a symbol as the tool name",
            "try { await codemode[Symbol('fs__move_file')]({}); return 'called'; } catch (e) { return 'refused' }",
            Contained,
        ),
        case(
            "prototype pollution does not reach the host",
            "Object.prototype.path = '/etc/passwd'; const r = await codemode.fs__list_allowed_directories({}).then(() => 'ok', e => e.name); delete Object.prototype.path; return r",
            Contained,
        ),
        case(
            "the stack does not show host paths",
            "try { null.x } catch (e) { return /\\/(root|home|work|usr)\\//.test(String(e.stack)) }",
            Returns(json!(false)),
        ),
        case(
            "Date.now is the only clock",
            "return [typeof performance, typeof Date.now()]",
            Returns(json!(["undefined", "number"])),
        ),
    ]
}

#[test]
fn sandbox_escape() {
    run_table("escape", cases());
}
