//! The tool side of the sandbox: what a script's `codemode.<name>(args)` reaches.
//!
//! A [`ToolHost`] answers calls by name. The runtime hands every call a [`CallContext`] so that a
//! wrapping layer (policies, audit, MCP elicitation) can tell evals and calls apart, and so that a
//! call may stay suspended for minutes (a human deciding) without the eval's wall-clock timeout
//! counting that time, if the wrapper asks for it with [`CallContext::pause_timeout`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::clock::{EvalClock, TimeoutPause};
use crate::park::{HumanWait, HumanWaits};

/// A boxed, `Send` future: the return type of [`ToolHost::call`], so that the trait stays
/// object-safe (`dyn ToolHost`) for hosts whose tools change at run time.
///
/// It is also what the workspace's library crates return from their public async functions,
/// for build time. rustc compiles an `async` body again in every crate that polls it (it treats
/// the body as it treats a closure: always inlinable), and with it every `async` body it awaits
/// in turn. A boxed future is polled through its vtable, made where the future is boxed, so
/// the body is compiled once, in its own crate. Before, the `codemode` binary compiled the
/// whole server a second time. One allocation per call is the price.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Identifies one evaluation. Unique within a process.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct EvalId(pub u64);

impl fmt::Display for EvalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What the runtime tells a [`ToolHost`] about one call.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The evaluation making the call.
    pub eval_id: EvalId,
    /// The call's number within its eval: 1, 2, 3… in order of start; the same `id` as in the
    /// ledger ([`crate::ToolCallRecord::id`]).
    pub call_id: u64,
    pub(crate) clock: Arc<EvalClock>,
    pub(crate) warnings: Arc<CallWarnings>,
    pub(crate) notes: Arc<CallWarnings>,
    pub(crate) human: Arc<HumanWaits>,
    /// The note of the [`HumanWait`] this call held when its eval was parked, when the call is
    /// made again after a resume.
    pub(crate) resumed_note: Option<Value>,
}

/// Warnings raised by tool calls during one eval, each with the call that raised it (the
/// runtime places it at that call's site in the script).
#[derive(Debug, Default)]
pub(crate) struct CallWarnings(std::sync::Mutex<Vec<(u64, String)>>);

impl CallWarnings {
    pub(crate) fn push(&self, call_id: u64, message: String) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((call_id, message));
    }

    pub(crate) fn take(&self) -> Vec<(u64, String)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Removes the messages of `call_id`, giving the last one.
    pub(crate) fn take_last(&self, call_id: u64) -> Option<String> {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut last = None;
        all.retain(|(id, message)| {
            if *id == call_id {
                last = Some(message.clone());
            }
            *id != call_id
        });
        last
    }
}

impl CallContext {
    /// Builds a context outside an eval, for testing a [`ToolHost`] on its own: its timeout
    /// pauses are no-ops.
    pub fn detached(eval_id: EvalId, call_id: u64) -> Self {
        CallContext {
            eval_id,
            call_id,
            clock: Arc::new(EvalClock::new(None)),
            warnings: Arc::default(),
            notes: Arc::default(),
            human: Arc::default(),
            resumed_note: None,
        }
    }

    /// [`CallContext::detached`] for a call made again after its eval was resumed, with the
    /// note its [`HumanWait`] held.
    pub fn detached_resumed(eval_id: EvalId, call_id: u64, note: Value) -> Self {
        CallContext {
            resumed_note: Some(note),
            ..Self::detached(eval_id, call_id)
        }
    }

    /// Says that this call now only waits for a human (an approval, an answer), until the
    /// returned guard is dropped. `note` is what the embedder needs to find the wait again
    /// (an approval id, say): it is saved with the call if the eval is parked.
    ///
    /// While the guard lives the eval's wall-clock timeout is paused (as with
    /// [`CallContext::pause_timeout`]), and the eval may be parked
    /// ([`crate::EvalControl::park`]) once every call it has in flight holds such a guard.
    /// Parking drops the call's future: the call is made again, with
    /// [`CallContext::resumed_note`], when the eval resumes without an answer for it.
    pub fn awaiting_human(&self, note: Value) -> HumanWait {
        HumanWait::new(self.human.clone(), self.call_id, note, self.clock.pause())
    }

    /// For a call made again after its eval was parked and resumed: the note its
    /// [`HumanWait`] held when the eval was parked. `None` for a call made the first time.
    ///
    /// A tool layer that asked a human uses it to find the question again (granted: now make
    /// the real call; still undecided: wait again, which may park again).
    pub fn resumed_note(&self) -> Option<&Value> {
        self.resumed_note.as_ref()
    }

    /// Whether this call's eval has parked ([`crate::EvalControl::park`]). A layer whose call
    /// future is dropped checks it to tell a call that will be made again after the resume
    /// (nothing ended: write no "cancelled" record, keep the question open) from a call whose
    /// eval ended.
    pub fn is_parked(&self) -> bool {
        self.human.is_parked()
    }

    /// Adds a warning to the eval's outcome ([`crate::EvalOutcome::warnings`]), placed at this
    /// call's site in the script: for something that did not make the call fail but is
    /// probably a mistake (a result that does not match the tool's declared output schema, …).
    pub fn warn(&self, message: impl Into<String>) {
        self.warnings.push(self.call_id, message.into());
    }

    /// Sets what the ledger says of this call besides its status ([`crate::ToolCallRecord::note`]):
    /// e.g. that a human approved it, and who. The last note before the call settles is kept.
    pub fn note(&self, text: impl Into<String>) {
        self.notes.push(self.call_id, text.into());
    }

    /// Stops the eval's wall-clock timeout from counting while the returned guard lives.
    ///
    /// Meant for time spent waiting on a human (an approval prompt has its own, separate
    /// timeout). Guards nest and may overlap across concurrent calls: the clock runs again when
    /// the last one is dropped.
    pub fn pause_timeout(&self) -> TimeoutPause {
        self.clock.pause()
    }

    /// Time left before the eval's wall-clock timeout, as of now; `None` without a timeout.
    pub fn remaining(&self) -> Option<std::time::Duration> {
        self.clock.remaining()
    }
}

/// Why a tool call failed, as a [`ToolHost`] reports it.
///
/// Each variant reaches the script as a rejected promise with its own JS error class, and the
/// ledger as its own status.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool has this name. The runtime adds the closest existing names (from
    /// [`ToolHost::tool_names`]) to the message the script sees. JS: `UnknownToolError`.
    #[error("unknown tool `{tool}`")]
    NotFound {
        /// The name the script called.
        tool: String,
    },
    /// The tool ran, or tried to, and failed. JS: `ToolError` with `.tool` and `.message`
    /// (and `.data` when given). Ledger status: `error`.
    #[error("{message}")]
    Failed {
        /// Human- and model-readable reason.
        message: String,
        /// Optional structured detail, passed to the script as `error.data`.
        data: Option<Value>,
    },
    /// A policy refused the call before it reached the tool. JS: `ToolCallDeniedError` with
    /// `.toolName` and `.reason`. Ledger status: `denied`.
    #[error("call to `{tool}` denied ({reason}): {message}")]
    Denied {
        /// The tool that was refused.
        tool: String,
        /// A short machine-readable reason (`denied`, `elicitation_declined`, …).
        reason: String,
        /// Human-readable explanation.
        message: String,
    },
}

impl ToolError {
    /// A [`ToolError::Failed`] with just a message.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed {
            message: message.into(),
            data: None,
        }
    }
}

/// Answers a script's `codemode.<name>(args)` calls.
///
/// `call` may take as long as it likes (the eval's timeout bounds it); calls of one eval run
/// concurrently, so `call` must not assume exclusivity. Implementations wrap each other: a policy
/// layer is a `ToolHost` around another `ToolHost`.
pub trait ToolHost: Send + Sync {
    /// Calls tool `name` with `args` (a JSON value; `{}` when the script passed none).
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;

    /// The names of the tools that exist now, for "did you mean" suggestions and listings.
    fn tool_names(&self) -> Vec<String>;
}

impl<T: ToolHost + ?Sized> ToolHost for Arc<T> {
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        (**self).call(name, args, cx)
    }
    fn tool_names(&self) -> Vec<String> {
        (**self).tool_names()
    }
}

impl<T: ToolHost + ?Sized> ToolHost for &T {
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        (**self).call(name, args, cx)
    }
    fn tool_names(&self) -> Vec<String> {
        (**self).tool_names()
    }
}

/// A [`ToolHost`] with no tools: every call fails with [`ToolError::NotFound`].
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTools;

impl ToolHost for NoTools {
    fn call<'a>(
        &'a self,
        name: &'a str,
        _args: Value,
        _cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            Err(ToolError::NotFound {
                tool: name.to_string(),
            })
        })
    }
    fn tool_names(&self) -> Vec<String> {
        Vec::new()
    }
}

type ToolFn = dyn Fn(Value) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync;

/// A [`ToolHost`] built from Rust closures: handy for embedding and for tests.
///
/// ```
/// use codemode_runtime::{FnTools, ToolError};
/// use serde_json::json;
/// let tools = FnTools::new()
///     .sync_tool("add", |args| {
///         let a = args["a"].as_f64().ok_or_else(|| ToolError::failed("a must be a number"))?;
///         let b = args["b"].as_f64().ok_or_else(|| ToolError::failed("b must be a number"))?;
///         Ok(json!(a + b))
///     });
/// assert_eq!(codemode_runtime::ToolHost::tool_names(&tools), vec!["add".to_string()]);
/// ```
#[derive(Clone, Default)]
pub struct FnTools {
    tools: std::collections::BTreeMap<String, Arc<ToolFn>>,
}

impl fmt::Debug for FnTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTools")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl FnTools {
    /// No tools yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an async tool.
    pub fn tool<F, Fut>(mut self, name: impl Into<String>, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        self.tools
            .insert(name.into(), Arc::new(move |v| Box::pin(f(v))));
        self
    }

    /// Adds a tool that answers at once.
    pub fn sync_tool<F>(self, name: impl Into<String>, f: F) -> Self
    where
        F: Fn(Value) -> Result<Value, ToolError> + Send + Sync + 'static,
    {
        let f = Arc::new(f);
        self.tool(name, move |v| {
            let f = f.clone();
            async move { f(v) }
        })
    }
}

impl ToolHost for FnTools {
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        _cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        match self.tools.get(name) {
            Some(f) => f(args),
            None => Box::pin(async move {
                Err(ToolError::NotFound {
                    tool: name.to_string(),
                })
            }),
        }
    }
    fn tool_names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }
}
