//! No ambient authority, and a fresh instance per eval.

use codemode_runtime::ErrorKind;
use serde_json::json;

use crate::{eval, failed, ok, show};

#[tokio::test]
async fn no_ambient_authority() {
    let globals = [
        "require",
        "module",
        "process",
        "std",
        "os",
        "fetch",
        "XMLHttpRequest",
        "WebSocket",
        "Deno",
        "Bun",
        "scriptArgs",
        "print",
        "setTimeout",
        "WebAssembly",
        "importScripts",
    ];
    for name in globals {
        let outcome = eval(&format!("typeof globalThis[{name:?}]")).await;
        assert_eq!(
            ok(&outcome),
            &json!("undefined"),
            "`{name}` should not exist: {}",
            show(&outcome)
        );
    }
    // Modules cannot be loaded: not QuickJS's `std`/`os`, nor files.
    for specifier in ["std", "os", "fs", "node:fs", "./x.js", "/etc/passwd"] {
        let code = format!(
            "try {{\n  await import({specifier:?});\n  return 'imported';\n}} catch (e) {{\n  return 'refused';\n}}"
        );
        let outcome = eval(&code).await;
        assert_eq!(
            ok(&outcome),
            &json!("refused"),
            "import({specifier:?}): {}",
            show(&outcome)
        );
    }
    // Static imports are not even code of either form.
    let outcome = eval("import * as std from 'std';\nstd.open('/etc/passwd', 'r')").await;
    let error = failed(&outcome, ErrorKind::Syntax);
    assert_eq!(
        (error.message.as_str(), error.line),
        ("SyntaxError: Unexpected token '*'", Some(1)),
        "{}",
        show(&outcome)
    );
    // Code generation works but reaches nothing more.
    let outcome = eval("new Function('return typeof require')()").await;
    assert_eq!(ok(&outcome), &json!("undefined"), "{}", show(&outcome));
}

#[tokio::test]
async fn each_eval_gets_a_fresh_instance() {
    let outcome = eval("globalThis.leak = 1;\nArray.prototype.evil = () => 'pwned';\nObject.prototype.polluted = true;\nvar hoisted = 2;\n'set'").await;
    assert_eq!(ok(&outcome), &json!("set"), "{}", show(&outcome));
    let outcome =
        eval("[typeof leak, typeof [].evil, ({}).polluted === undefined, typeof hoisted]").await;
    assert_eq!(
        ok(&outcome),
        &json!(["undefined", "undefined", true, "undefined"]),
        "{}",
        show(&outcome)
    );
}

#[tokio::test]
async fn the_codemode_object_cannot_be_tampered_with() {
    let code = "'use strict';\nconst out = [];\ntry { codemode.echo = 1; out.push('assigned'); } catch (e) { out.push(e.name); }\ntry { globalThis.codemode = {}; out.push('replaced'); } catch (e) { out.push(e.name); }\nout.push(typeof codemode.echo);\nout";
    let outcome = eval(code).await;
    assert_eq!(
        ok(&outcome),
        &json!(["TypeError", "TypeError", "function"]),
        "{}",
        show(&outcome)
    );
}
