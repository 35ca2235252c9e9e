//! The scanner on small crates written inline: what it must find, so the check cannot pass
//! because it reads nothing.

use std::collections::HashMap;

use crate::model::Workspace;
use crate::parse::parse;
use crate::ratchet::{Findings, Known};

fn workspace(files: &[(&str, &str)]) -> Workspace {
    let files: HashMap<String, String> = files
        .iter()
        .map(|(p, s)| (p.to_string(), s.to_string()))
        .collect();
    Workspace::load(&["lib.rs"], &|path| files.get(path).cloned())
}

/// Every edge as `from:line -> to`.
fn edges(workspace: &Workspace) -> Vec<String> {
    let path = |f: usize| workspace.files[f].path.as_str();
    let mut edges: Vec<String> = workspace
        .edges
        .iter()
        .map(|((from, to), r)| format!("{}:{} -> {}", path(*from), r.line, path(*to)))
        .collect();
    edges.sort();
    edges
}

fn cycles(workspace: &Workspace, allowed: &[&str]) -> Vec<Vec<String>> {
    let path = |f: &usize| workspace.files[*f].path.clone();
    workspace
        .cycles(allowed)
        .iter()
        .map(|c| c.iter().map(path).collect())
        .collect()
}

#[test]
fn a_cycle_through_use_and_an_inline_path_is_found() {
    let ws = workspace(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "use crate::b::B;\npub struct A(B);\n"),
        (
            "b.rs",
            "pub struct B;\nfn f() -> Option<super::c::C> { None }\n",
        ),
        ("c.rs", "pub struct C;\nfn g(_: crate::a::A) {}\n"),
    ]);
    assert!(ws.missing.is_empty(), "{:?}", ws.missing);
    assert_eq!(
        edges(&ws),
        ["a.rs:1 -> b.rs", "b.rs:2 -> c.rs", "c.rs:2 -> a.rs"]
    );
    assert_eq!(cycles(&ws, &[]), [["a.rs", "b.rs", "c.rs"]]);
    assert!(
        cycles(&ws, &["c.rs"]).is_empty(),
        "an allowed file breaks the cycle"
    );
}

#[test]
fn a_re_export_leads_to_the_file_that_defines_the_item() {
    let ws = workspace(&[
        ("lib.rs", "mod config;\nmod user;\nmod globbed;\n"),
        (
            "config/mod.rs",
            "mod profile;\nmod rules;\npub use profile::Profile;\npub(crate) use rules::*;\npub fn load() {}\n",
        ),
        (
            "config/profile.rs",
            "pub struct Profile;\nfn read() { super::load() }\n",
        ),
        ("config/rules.rs", "pub struct Rule;\n"),
        (
            "user.rs",
            "use crate::config::Profile;\nuse crate::config::{self, Rule};\n",
        ),
        ("globbed.rs", "use crate::config::*;\nfn f(_: Rule) {}\n"),
    ]);
    assert_eq!(
        edges(&ws),
        [
            "config/profile.rs:2 -> config/mod.rs",
            "globbed.rs:2 -> config/rules.rs",
            "user.rs:1 -> config/profile.rs",
            "user.rs:2 -> config/rules.rs",
        ]
    );
    assert!(
        cycles(&ws, &[]).is_empty(),
        "re-export lines are no references"
    );
}

#[test]
fn a_re_export_the_file_itself_uses_is_a_reference() {
    let ws = workspace(&[
        ("lib.rs", "mod a;\n"),
        (
            "a/mod.rs",
            "mod b;\npub use b::B;\npub struct A;\n\nfn f(_: B) {}\n",
        ),
        ("a/b.rs", "pub struct B(super::A);\n"),
    ]);
    assert_eq!(edges(&ws), ["a/b.rs:1 -> a/mod.rs", "a/mod.rs:5 -> a/b.rs"]);
    assert_eq!(cycles(&ws, &[]), [["a/b.rs", "a/mod.rs"]]);
}

#[test]
fn test_code_is_not_counted() {
    let source = "\
fn kept() {
}

#[cfg(test)]
mod tests {
    use crate::b::B;
    #[test]
    fn long() {}
}
#[cfg(test)]
mod more_tests;
#[cfg(all(test, unix))]
fn helper() {}
#[cfg(not(test))]
fn not_test() {}
";
    let parsed = parse(source);
    assert_eq!(parsed.lines, 15);
    assert_eq!(parsed.test_lines, 6 + 2, "the two test modules");
    let names: Vec<&str> = parsed.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["kept", "not_test"]);

    let ws = workspace(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", source),
        ("b.rs", "pub struct B;\nfn f() { crate::a::kept() }\n"),
    ]);
    assert_eq!(ws.files.len(), 3, "more_tests.rs is never read");
    assert!(ws.missing.is_empty());
    assert_eq!(edges(&ws), ["b.rs:2 -> a.rs"]);
}

#[test]
fn functions_run_from_fn_to_their_closing_brace() {
    let source = r#####"
pub struct S;
impl<T: Into<u8>> From<T> for S {
    fn from(_: T) -> S {
        let text = "} { // not code";
        let raw = r#"" }"#;
        let c = '}';
        /* } /* nested */ } */
        fn inner<'a>(x: &'a str) -> &'a str {
            x
        }
        S
    }
}
trait T {
    fn declared(&self);
    fn provided(&self) -> impl Iterator<Item = u8> + use<Self> {
        std::iter::empty()
    }
}
mod inline {
    pub fn f() {}
}
"#####;
    let parsed = parse(source);
    let functions: Vec<(&str, usize, usize)> = parsed
        .functions
        .iter()
        .map(|f| (f.name.as_str(), f.first_line, f.lines()))
        .collect();
    assert_eq!(
        functions,
        [
            ("S::from", 4, 10),
            ("S::from::inner", 9, 3),
            ("T::provided", 17, 3),
            ("inline::f", 22, 1),
        ]
    );
}

#[test]
fn the_lists_only_shrink() {
    let findings = Findings {
        cycles: Vec::new(),
        files: [("big.rs".to_string(), 700)].into(),
        functions: [
            ("big.rs::f".to_string(), 120),
            ("big.rs::g".to_string(), 150),
        ]
        .into(),
    };
    let cycle = vec!["a.rs", "b.rs"];
    let known = Known {
        cycles: &[&["b.rs", "a.rs"]],
        files: &[("big.rs", 700)],
        functions: &[("big.rs::f", 130), ("big.rs::g", 140), ("gone.rs::h", 100)],
    };
    assert_eq!(
        known.problems_with(&[cycle.clone(), vec!["c.rs", "d.rs"]], &findings),
        [
            "new import cycle: c.rs, d.rs",
            "function grew from 140 to 150 lines: big.rs::g (KNOWN_LONG_FUNCTIONS may only shrink)",
            "listed function is within the limit now (take it off KNOWN_LONG_FUNCTIONS): gone.rs::h (100)",
        ]
    );
    let empty = Known {
        cycles: &[],
        files: &[],
        functions: &[],
    };
    assert_eq!(empty.problems_with(&[cycle], &findings).len(), 4);
    assert_eq!(
        known.problems_with(&[], &findings)[0],
        "listed cycle not found (take it off KNOWN_CYCLES, or list the cycle it became): b.rs, a.rs"
    );
}
