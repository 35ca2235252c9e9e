//! # codemode
//!
//! Run the JavaScript an AI agent writes *safely*: a QuickJS guest in a WebAssembly sandbox
//! (wasmtime) with fuel, memory, time and output limits and no ambient authority, whose
//! `codemode.<tool>(args)` calls cross into the host under per-call policies.
//!
//! This crate re-exports the library API of the workspace:
//! - [`runtime`]: the sandbox ([`Runtime`], [`EvalOptions`], [`ToolHost`], [`EvalOutcome`]);
//! - [`policies`]: configuration, profiles, dispositions, static preview, audit records;
//! - [`host`]: the MCP server, upstream clients and the CLI.

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
}
