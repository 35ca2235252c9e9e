//! The workspace's shape, checked by every `cargo test` (`cargo test --test structure` alone):
//!
//! - no import cycle between the modules (source files) of a crate, except through the runtime's
//!   façade (`runtime/src/lib.rs`): a file depends on another when it names an item defined
//!   there, through a `use` or a path in its code (`crate::a::B`, `super::f`), re-exports
//!   followed to the file that defines the item;
//! - no source file over [`MAX_FILE_LINES`] physical lines, inline `#[cfg(test)]` modules not
//!   counted;
//! - no function of [`MAX_FUNCTION_LINES`] lines or more, from its `fn` line to its closing brace;
//! - no crate the release build optimises at opt-level 1 depends on one it does not optimise
//!   (`profile`).
//!
//! Test code is left out: `#[cfg(test)]` items and the files only they declare. The check is
//! a ratchet: what breaks a limit today is listed below with its size, and the test fails on
//! anything new, on a listed entry that grew, and on a listed entry that no longer breaks the
//! limit (take it off the list), so the lists only shrink.
//!
//! The scanner is a small tokenizer and item reader (`lexer`, `parse`), not a Rust parser: it
//! reads this workspace's sources in a few milliseconds and is tested on small sources in
//! `scanner_tests`.
#![expect(
    clippy::print_stderr,
    reason = "the structure check prints what it found"
)]

mod lexer;
mod model;
mod parse;
mod profile;
mod ratchet;
mod scanner_tests;

use std::path::Path;

use model::Workspace;
use ratchet::{Findings, Known};

/// The binary's package, by its root files; the library crates are read from the workspace's
/// `members` (so a new crate is checked from its first commit).
const PACKAGE_ROOTS: &[&str] = &["src/lib.rs", "src/main.rs"];

/// Every crate of the workspace outside `tests/`, by its root file (the guest is outside the
/// workspace).
fn crate_roots(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = manifest
        .lines()
        .find_map(|line| line.trim().strip_prefix("members = ["))
        .expect("the workspace's `members = [...]` line");
    let mut roots: Vec<String> = PACKAGE_ROOTS.iter().map(|r| r.to_string()).collect();
    for member in members.trim_end_matches(']').split(',') {
        let member = member.trim().trim_matches('"');
        if !member.is_empty() && !member.starts_with("tests/") {
            roots.push(format!("{member}/src/lib.rs"));
        }
    }
    roots
}

/// Files whose references may close a cycle: the runtime's façade re-exports what its modules
/// define, and they name its items.
const ALLOWED_IN_CYCLES: &[&str] = &["runtime/src/lib.rs"];

/// A source file's limit, in physical lines without its inline `#[cfg(test)]` modules.
pub const MAX_FILE_LINES: usize = 600;

/// A function has fewer lines than this.
pub const MAX_FUNCTION_LINES: usize = 100;

/// Cycles allowed for now, each as the files of one strongly connected component (none).
const KNOWN_CYCLES: &[&[&str]] = &[];

/// Files allowed over the limit for now, with their lines (none).
const KNOWN_LONG_FILES: &[(&str, usize)] = &[];

/// Functions allowed over the limit for now (`file::Type::function`), with their lines (none).
const KNOWN_LONG_FUNCTIONS: &[(&str, usize)] = &[];

#[test]
fn the_workspace_keeps_its_structure() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |path: &str| std::fs::read_to_string(root.join(path)).ok();
    let roots = crate_roots(root);
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    let workspace = Workspace::load(&roots, &read);
    assert!(
        workspace.missing.is_empty(),
        "modules whose file was not found: {:?}",
        workspace.missing
    );
    assert!(
        workspace.files.len() > 100,
        "only {} files read",
        workspace.files.len()
    );

    let findings = Findings::of(&workspace, ALLOWED_IN_CYCLES);
    let known = Known {
        cycles: KNOWN_CYCLES,
        files: KNOWN_LONG_FILES,
        functions: KNOWN_LONG_FUNCTIONS,
    };
    let report = findings.report(&workspace);
    let problems = known.problems(&findings, &workspace);
    if problems.is_empty() {
        eprintln!("{report}");
    } else {
        panic!(
            "{report}\nThe structure check fails (the lists are at the top of tests/structure/main.rs):\n{}",
            problems.join("\n")
        );
    }
}

/// The lints of one table (`rust` or `clippy`) under `prefix` (`workspace.lints` or `lints`) of
/// a Cargo.toml: its `name = "level"` lines, comments left out.
fn lint_table(manifest: &str, prefix: &str, table: &str) -> Vec<String> {
    let header = format!("[{prefix}.{table}]");
    manifest
        .lines()
        .skip_while(|l| l.trim() != header)
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['))
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// The guest is a workspace of its own and cannot inherit the lints: its list must be the
/// workspace's, so that the project's lints stay one set.
#[test]
fn the_guest_lints_as_the_workspace_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let guest = std::fs::read_to_string(root.join("guest/Cargo.toml")).unwrap();
    for table in ["rust", "clippy"] {
        let ours = lint_table(&workspace, "workspace.lints", table);
        assert!(
            !ours.is_empty(),
            "no [workspace.lints.{table}] in Cargo.toml"
        );
        assert_eq!(
            lint_table(&guest, "lints", table),
            ours,
            "guest/Cargo.toml's [lints.{table}] differs from Cargo.toml's [workspace.lints.{table}]"
        );
    }
}
