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
