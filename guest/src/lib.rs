//! The codemode guest: QuickJS (javy) for wasm32-wasip1, JS semantics only.
//!
//! [`abi`] is the only place that touches host imports; [`engine`] drives the JS runtime;
//! [`heap`] fixes how QuickJS measures its heap on WASI; [`fast_json`] encodes simple tool
//! arguments without `JSON.stringify`; `prelude.js` defines `codemode`,
//! `console`, the error classes and result encoding.

mod abi;
mod engine;
mod fast_json;
mod heap;
