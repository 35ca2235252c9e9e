//! The codemode guest: QuickJS (javy) for wasm32-wasip1, JS semantics only.
//!
//! [`abi`] is the only place that touches host imports; [`engine`] drives the JS runtime;
//! [`forms`] compiles the code as a plain script, with top-level `await` or as a function body
//! (top-level `return`) and starts its outcome; [`calls`] starts tool calls and settles them;
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
mod forms;
mod heap;
mod namespace;
mod patch;
mod warnings;
