//! Replays each fuzz target's committed corpus (`fuzz/corpus/<target>/`) through the target's
//! body: `cargo test` runs every input the fuzzer kept, without an instrumented build.

use codemode_fuzz_targets as targets;

#[test]
fn config_corpus() {
    assert!(targets::replay("config", targets::config) > 0);
}

#[test]
fn preview_corpus() {
    assert!(targets::replay("preview", targets::preview) > 0);
}

#[test]
fn prompt_corpus() {
    assert!(targets::replay("prompt", targets::prompt) > 0);
}

#[test]
fn tool_results_corpus() {
    assert!(targets::replay("tool_results", targets::tool_results) > 0);
}

#[test]
fn abi_corpus() {
    assert!(targets::replay("abi", targets::abi) > 0);
}
