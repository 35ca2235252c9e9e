//! # codemode
//!
//! Run the JavaScript an AI agent writes *safely*: a QuickJS guest in a WebAssembly sandbox
//! (wasmtime) with fuel, memory, time and output limits and no ambient authority, whose
//! `codemode.<tool>(args)` calls cross into the host under per-call policies.
//!
//! This crate re-exports the library API of the workspace:
//! - [`runtime`]: the sandbox ([`Runtime`], [`EvalOptions`], [`ToolHost`], [`EvalOutcome`]);
//! - [`policies`]: configuration, profiles, dispositions, static preview, audit records;
//! - [`host`]: the MCP server ([`host::server::Server`]), upstream clients, approval channels.

pub use codemode_host as host;
pub use codemode_policies as policies;
pub use codemode_runtime as runtime;
pub use codemode_runtime::{
    CallContext, ErrorKind, EvalError, EvalOptions, EvalOutcome, FnTools, NoTools, Runtime,
    RuntimeConfig, ToolError, ToolHost,
};

/// README.md's Rust blocks, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    /// The Rust block of a Markdown `section` (the text under its `## ` heading).
    fn rust_block<'a>(markdown: &'a str, section: &str) -> Option<&'a str> {
        let heading = format!("\n## {section}\n");
        let body = &markdown[markdown.find(&heading)? + heading.len()..];
        let body = &body[..body.find("\n## ").unwrap_or(body.len())];
        let code = &body[body.find("```rust\n")? + "```rust\n".len()..];
        Some(&code[..code.find("```")?])
    }

    #[test]
    fn the_readme_embedding_example_is_the_tested_example_file() {
        let readme = include_str!("../README.md");
        let example = include_str!("../runtime/examples/embedding.rs");
        assert_eq!(
            rust_block(readme, "Embedding"),
            Some(example),
            "README.md's Embedding block must be runtime/examples/embedding.rs, verbatim"
        );
    }

    #[test]
    fn a_differing_block_is_told_apart() {
        let readme = "# T\n\n## Embedding\n\ntext\n\n```rust\nfn main() {}\n```\n\n## Next\n```rust\nx\n```\n";
        assert_eq!(rust_block(readme, "Embedding"), Some("fn main() {}\n"));
        assert_eq!(rust_block(readme, "Missing"), None);
        assert_ne!(rust_block(readme, "Embedding"), Some("fn main() { }\n"));
    }

    /// The paths README's architecture picture names, resolved as a reader would: a line that
    /// starts at column 0 with `dir/` sets the crate directory; a line indented by two spaces
    /// starts an entry of it, and when that entry is `dir/`, the entry's paths and those of the
    /// lines continuing it (indented deeper) are looked up in that directory first; every path is
    /// then looked up in the crate directory, then at the repository's root.
    fn architecture_paths(readme: &str) -> Vec<(String, Vec<std::path::PathBuf>)> {
        let section = &readme[readme.find("\n## Architecture\n").expect("the section")..];
        let block = &section[section.find("```text\n").expect("the picture") + 8..];
        let block = &block[..block.find("```").expect("its end")];
        let is_path = |token: &str| {
            let plain = token
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
            let file = [".rs", ".js", ".md", ".sh", ".wasm", ".patch", ".py"]
                .iter()
                .any(|ext| token.ends_with(ext));
            plain && !token.starts_with('.') && (token.ends_with('/') || file)
        };
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let (mut top, mut sub) = (root.to_path_buf(), None::<std::path::PathBuf>);
        let mut named = Vec::new();
        for line in block.lines() {
            let tokens: Vec<&str> = line
                .split(|c: char| c.is_whitespace() || "·(),;:`".contains(c))
                .filter(|t| !t.is_empty())
                .collect();
            let Some(first) = tokens.first() else {
                continue;
            };
            let indent = line.len() - line.trim_start().len();
            let mut rest = &tokens[..];
            if indent == 0 && first.ends_with('/') && is_path(first) {
                top = root.join(first);
                sub = None;
                named.push((first.to_string(), vec![top.clone()]));
                rest = &tokens[1..];
            } else if indent == 2 {
                sub = None;
                if first.ends_with('/') && is_path(first) {
                    sub = Some(top.join(first));
                    named.push((first.to_string(), vec![top.join(first)]));
                    rest = &tokens[1..];
                }
            }
            for token in rest.iter().filter(|t| is_path(t)) {
                let mut candidates: Vec<std::path::PathBuf> =
                    sub.iter().map(|s| s.join(token)).collect();
                candidates.push(top.join(token));
                candidates.push(root.join(token));
                named.push((token.to_string(), candidates));
            }
        }
        named
    }

    #[test]
    fn the_architecture_picture_names_real_paths_and_every_module() {
        let readme = include_str!("../README.md");
        let named = architecture_paths(readme);
        let mut found = std::collections::BTreeSet::new();
        let mut missing = Vec::new();
        for (token, candidates) in &named {
            match candidates.iter().find(|c| c.exists()) {
                Some(path) => {
                    found.insert(path.canonicalize().unwrap());
                }
                None => missing.push(token.clone()),
            }
        }
        assert_eq!(
            missing,
            Vec::<String>::new(),
            "named in README's picture but missing"
        );

        // Every module a newcomer must find: each directory and file directly under the
        // library crates' src/ (their lib.rs aside).
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut unnamed = Vec::new();
        for krate in [
            "runtime/src",
            "policies/src",
            "store/src",
            "upstream/src",
            "host/src",
        ] {
            for entry in std::fs::read_dir(root.join(krate)).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if name == "lib.rs" || name.ends_with(".json") {
                    continue;
                }
                if !found.contains(&path.canonicalize().unwrap()) {
                    unnamed.push(format!("{krate}/{name}"));
                }
            }
        }
        assert_eq!(
            unnamed,
            Vec::<String>::new(),
            "missing from README's picture"
        );
    }

    #[test]
    fn architecture_paths_follow_the_picture_s_bases() {
        let readme = "# R\n\n## Architecture\n\n```text\nhost/src/  wiring\n  cli/  run.rs\n        check.rs\n  session.rs  (guest/ABI.md)\n```\n";
        let named: Vec<(String, Vec<String>)> = architecture_paths(readme)
            .into_iter()
            .map(|(t, c)| {
                let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
                let rel = c
                    .iter()
                    .map(|p| p.strip_prefix(root).unwrap().display().to_string())
                    .collect();
                (t, rel)
            })
            .collect();
        assert_eq!(
            named,
            [
                ("host/src/".to_string(), vec!["host/src".to_string()]),
                ("cli/".to_string(), vec!["host/src/cli".to_string()]),
                (
                    "run.rs".to_string(),
                    vec![
                        "host/src/cli/run.rs".to_string(),
                        "host/src/run.rs".to_string(),
                        "run.rs".to_string()
                    ]
                ),
                (
                    "check.rs".to_string(),
                    vec![
                        "host/src/cli/check.rs".to_string(),
                        "host/src/check.rs".to_string(),
                        "check.rs".to_string()
                    ]
                ),
                (
                    "session.rs".to_string(),
                    vec!["host/src/session.rs".to_string(), "session.rs".to_string()]
                ),
                (
                    "guest/ABI.md".to_string(),
                    vec![
                        "host/src/guest/ABI.md".to_string(),
                        "guest/ABI.md".to_string()
                    ]
                ),
            ]
        );
    }
}
