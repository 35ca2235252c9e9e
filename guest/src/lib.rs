//! The codemode guest: QuickJS (javy) for wasm32-wasip1, JS semantics only.
//!
//! [`abi`] is the only place that touches host imports; [`engine`] drives the JS runtime;
//! [`calls`] starts tool calls and settles them;
//! [`heap`] fixes how QuickJS measures and limits its heap on WASI; [`fast_json`] encodes simple
//! tool arguments without `JSON.stringify`; [`namespace`] is the `codemode` object; `prelude.js`
//! makes its tool functions and defines `console`, the error classes and result encoding;
//! [`patch`] declares what `quickjs-wasi.patch` adds to QuickJS; [`warnings`] collects what the
//! guest notices about a script that finished but probably not as meant; [`adoption`] says when
//! adopting a promise of the guest's own can run no script code.

mod abi;
mod adoption;
mod calls;
mod engine;
mod fast_json;
mod heap;
mod namespace;
mod patch;
mod warnings;
