//! The bodies of codemode's fuzz targets, one function per target, each taking the fuzzer's
//! bytes. `fuzz/fuzz_targets/<name>.rs` hands them to libFuzzer (`cargo fuzz run <name>`); this
//! crate's test replays every file of `fuzz/corpus/<name>/` through the same function, so the
//! committed corpus (and every crash once minimised into it) runs in an ordinary `cargo test`.
//!
//! Each target asserts what must hold for *any* input: no panic, no hang, and the target's own
//! invariant (below).

mod abi;
mod prompt;
mod tool_results;

pub use abi::abi;
pub use prompt::prompt;
pub use tool_results::tool_results;

/// The config reader: any text either parses into a config or gives errors that each name a
/// JSON path; a config that parses resolves its default profile and decides a call.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match codemode_policies::Config::from_json_str(text) {
        Ok(config) => {
            if let Ok(Some(profile)) = config.resolve_profile(None) {
                let _ = profile.disposition("a__b", &serde_json::json!({"path": "/etc/x"}));
            }
        }
        Err(errors) => {
            assert!(!errors.to_string().is_empty(), "an error without a message");
        }
    }
}

/// The static preview (oxc): any text gives call sites whose positions lie inside the text.
pub fn preview(data: &[u8]) {
    let Ok(code) = std::str::from_utf8(data) else {
        return;
    };
    let preview = codemode_script::extract_tool_calls(code);
    // Lines as JavaScript counts them: `\r\n`, `\n`, `\r`, U+2028 and U+2029 each end one.
    let lines = 1 + code
        .replace("\r\n", "\n")
        .chars()
        .filter(|c| matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}'))
        .count() as u32;
    for call in &preview.calls {
        assert!(
            call.line >= 1 && call.line <= lines,
            "line {} outside 1..={lines}",
            call.line
        );
        assert!(call.column >= 1, "column {}", call.column);
    }
}

/// Runs `f` on every file of `fuzz/corpus/<target>/` (the committed corpus): how `cargo test`
/// replays a target without an instrumented build. Returns how many inputs ran.
pub fn replay(target: &str, f: fn(&[u8])) -> usize {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the corpus {}: {e}", dir.display()))
        .map(|e| e.expect("a corpus entry").path())
        .collect();
    entries.sort();
    for path in &entries {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        f(&data);
    }
    entries.len()
}
