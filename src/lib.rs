//! # codemode
//!
//! Run the JavaScript an AI agent writes *safely*: a QuickJS guest in a WebAssembly sandbox
//! (wasmtime) with fuel, memory, time and output limits and no ambient authority, whose
//! `codemode.<tool>(args)` calls cross into the host under per-call policies.
//!
//! This crate re-exports the library API of the workspace:
//! - [`runtime`]: the sandbox ([`Runtime`], [`EvalOptions`], [`ToolHost`], [`EvalOutcome`]);
//! - [`config`]: the configuration file's settings, its reader and its JSON Schema;
//! - [`script`]: JavaScript as models write it (fences, TypeScript) and its call sites, unrun;
//! - [`policies`]: the whole configuration, profiles, dispositions, approvals, audit records;
//! - [`store`]: the sealed record store (local files or Redis) that parked evals, logins and
//!   remembered approvals live in;
//! - [`upstream`]: the tools behind `codemode.*`: upstream MCP servers' clients, command tools,
//!   the catalog;
//! - [`host`]: the MCP server ([`host::Server`]), durable parking, approval channels.

pub use codemode_config as config;
pub use codemode_host as host;
pub use codemode_policies as policies;
pub use codemode_runtime as runtime;
pub use codemode_runtime::{
    CallContext, ErrorKind, EvalError, EvalOptions, EvalOutcome, FnTools, NoTools, Runtime,
    RuntimeConfig, ToolError, ToolHost,
};
pub use codemode_script as script;
pub use codemode_store as store;
pub use codemode_upstream as upstream;

/// README.md's Rust blocks, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(test)]
mod schema_tests;
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

    /// The paths the picture under `heading` names (README's flows, docs/ARCHITECTURE.md's
    /// modules), resolved as a reader would: a line that
    /// starts at column 0 with `dir/` sets the crate directory; a line indented by two spaces
    /// starts an entry of it, and when that entry is `dir/`, the entry's paths and those of the
    /// lines continuing it (indented deeper) are looked up in that directory first; every path is
    /// then looked up in the crate directory, then at the repository's root.
    fn architecture_paths(text: &str, heading: &str) -> Vec<(String, Vec<std::path::PathBuf>)> {
        let section = &text[text
            .find(&format!("\n## {heading}\n"))
            .expect("the section")..];
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
        let modules = include_str!("../docs/ARCHITECTURE.md");
        let mut named = architecture_paths(readme, "Architecture");
        named.extend(architecture_paths(modules, "Modules"));
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
            "named in README's flows or docs/ARCHITECTURE.md but missing"
        );

        // Every module a newcomer must find: each directory and file directly under the
        // library crates' src/ (their lib.rs aside).
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut unnamed = Vec::new();
        for krate in [
            "runtime/src",
            "config/src",
            "script/src",
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
            "missing from docs/ARCHITECTURE.md"
        );
    }

    #[test]
    fn architecture_paths_follow_the_picture_s_bases() {
        let readme = "# R\n\n## Architecture\n\n```text\nhost/src/  wiring\n  cli/  run.rs\n        check.rs\n  session.rs  (guest/ABI.md)\n```\n";
        let named: Vec<(String, Vec<String>)> = architecture_paths(readme, "Architecture")
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

    /// The fenced `json` and `jsonc` blocks of a Markdown text: each block's 1-based fence line
    /// and its body.
    pub(crate) fn json_blocks(markdown: &str) -> Vec<(usize, String)> {
        let mut blocks = Vec::new();
        let mut open: Option<(usize, String)> = None;
        for (n, line) in markdown.lines().enumerate() {
            let fence = line.trim_end();
            if let Some((_, body)) = open.as_mut() {
                if fence == "```" {
                    blocks.extend(open.take());
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            } else if fence == "```json" || fence == "```jsonc" {
                open = Some((n + 1, String::new()));
            }
        }
        blocks
    }

    /// The keys of a JSON text's top-level object, read past strings, `//` and `/* */`
    /// comments (as the config reader allows them); `None` when the text is not an object.
    pub(crate) fn top_level_keys(json: &str) -> Option<Vec<String>> {
        let mut chars = json.chars().peekable();
        let (mut depth, mut keys, mut last_string) = (0usize, Vec::new(), None::<String>);
        let mut seen_object = false;
        while let Some(c) = chars.next() {
            match c {
                '/' if chars.peek() == Some(&'/') => {
                    chars.by_ref().find(|&c| c == '\n');
                }
                '/' if chars.peek() == Some(&'*') => {
                    chars.next();
                    let mut star = false;
                    for c in chars.by_ref() {
                        if star && c == '/' {
                            break;
                        }
                        star = c == '*';
                    }
                }
                '"' => {
                    let mut text = String::new();
                    while let Some(c) = chars.next() {
                        match c {
                            '\\' => text.extend(chars.next()),
                            '"' => break,
                            c => text.push(c),
                        }
                    }
                    last_string = Some(text);
                    continue;
                }
                ':' if depth == 1 => keys.extend(last_string.take()),
                '{' | '[' => {
                    if depth == 0 && c == '[' {
                        return None;
                    }
                    seen_object = true;
                    depth += 1;
                }
                '}' | ']' => depth = depth.checked_sub(1)?,
                c if depth == 0 && !c.is_whitespace() => return None,
                _ => {}
            }
            if !c.is_whitespace() {
                last_string = None;
            }
        }
        seen_object.then_some(keys)
    }

    #[test]
    fn top_level_keys_skip_nested_keys_strings_and_comments() {
        let keys = top_level_keys(
            "// a comment: \"x\": 1\n{ \"a\": {\"b\": 1}, /* \"c\": 2 */ \"d\" : \"e: \\\"f\\\"\", }",
        );
        assert_eq!(keys, Some(vec!["a".to_string(), "d".to_string()]));
        assert_eq!(top_level_keys("\"durable\": {\"store\": \"local\"}"), None);
        assert_eq!(top_level_keys("[1, 2]"), None);
        let blocks = json_blocks("t\n```json\n{}\n```\n```js\nx\n```\n```jsonc\n{\"a\": 1}\n```\n");
        assert_eq!(
            blocks,
            [(2, "{}\n".to_string()), (8, "{\"a\": 1}\n".to_string())]
        );
    }

    /// The complete configs the documentation shows: each fenced `json` (or `jsonc`) block of
    /// README.md, SECURITY.md and docs/*.md whose top-level object has `mcpServers`, `servers`
    /// or `evaluation`, with its file and the line of its fence. A block showing one section
    /// (`"durable": {…}`) is not a whole file and is left out.
    pub(crate) fn complete_doc_configs() -> Vec<(String, usize, String)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = vec![root.join("README.md"), root.join("SECURITY.md")];
        let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
            .expect("docs/")
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "md"))
            .collect();
        docs.sort();
        files.extend(docs);
        let mut configs = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).expect("read the file");
            let name = file.strip_prefix(root).unwrap().display().to_string();
            for (line, block) in json_blocks(&text) {
                let Some(keys) = top_level_keys(&block) else {
                    continue;
                };
                if keys
                    .iter()
                    .any(|k| ["mcpServers", "servers", "evaluation"].contains(&k.as_str()))
                {
                    configs.push((name.clone(), line, block));
                }
            }
        }
        configs
    }

    /// Every complete config the documentation shows ([`complete_doc_configs`]) parses.
    /// `${VAR}` references are given a stand-in value: the docs cannot know the reader's
    /// environment.
    #[test]
    fn every_complete_config_in_the_docs_parses() {
        let (mut checked, mut failures) = (0, Vec::new());
        for (name, line, block) in complete_doc_configs() {
            checked += 1;
            let parsed = codemode_policies::Config::from_json_str_with_env(&block, |name| {
                Some(format!("stand-in-for-{name}"))
            });
            if let Err(errors) = parsed {
                failures.push(format!("{name}, the block at line {line}:\n{errors}"));
            }
        }
        assert_eq!(
            failures,
            Vec::<String>::new(),
            "configs in the docs that do not parse"
        );
        assert!(
            checked >= 4,
            "only {checked} complete configs found in the docs"
        );
    }
}
