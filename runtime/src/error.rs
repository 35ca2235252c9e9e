//! Errors building a [`crate::Runtime`] and invalid settings. (Eval failures are data:
//! [`crate::EvalError`].)

/// Why a [`crate::Runtime`] could not be built. The underlying error, when there is one, is the
/// [`source`](std::error::Error::source), so printing the whole chain (e.g. with anyhow's
/// `{:#}`) shows every cause.
///
/// ```
/// use codemode_runtime::{Runtime, RuntimeConfig, RuntimeError};
/// let mut config = RuntimeConfig::default();
/// config.max_concurrent_evals(0);
/// match Runtime::new(&config) {
///     Err(RuntimeError::InvalidConfig(e)) => assert_eq!(e.field(), "max_concurrent_evals"),
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// A [`crate::RuntimeConfig`] setting is out of range ([`crate::RuntimeConfig::validate`]).
    #[error("invalid runtime configuration: {0}")]
    InvalidConfig(InvalidConfig),
    /// The wasmtime engine rejected the configuration (e.g. the instance pool could not
    /// reserve its address space).
    #[error("configuring the WebAssembly engine failed")]
    Engine(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The guest module did not compile.
    #[error("compiling the guest module failed")]
    Compile(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The guest's imports could not be satisfied.
    #[error("linking the guest module failed")]
    Link(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The thread that advances the engine's epoch (what makes wall-clock timeouts interrupt
    /// running guest code) could not be started.
    #[error("starting the epoch ticker thread failed")]
    EpochTicker(#[source] std::io::Error),
}

impl RuntimeError {
    pub(crate) fn engine(error: wasmtime::Error) -> Self {
        RuntimeError::Engine(error.into_boxed_dyn_error())
    }

    pub(crate) fn compile(error: wasmtime::Error) -> Self {
        RuntimeError::Compile(error.into_boxed_dyn_error())
    }

    pub(crate) fn link(error: wasmtime::Error) -> Self {
        RuntimeError::Link(error.into_boxed_dyn_error())
    }
}

/// A setting out of its range: which one, and why. Returned by
/// [`crate::RuntimeConfig::validate`] and [`crate::EvalOptions::validate`].
///
/// ```
/// use codemode_runtime::EvalOptions;
/// let mut options = EvalOptions::default();
/// options.max_concurrent_tool_calls(0);
/// let error = options.validate(&Default::default()).unwrap_err();
/// assert_eq!(error.field(), "max_concurrent_tool_calls");
/// assert_eq!(error.to_string(), "`max_concurrent_tool_calls` must be at least 1 (it is 0)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}` {reason}")]
pub struct InvalidConfig {
    field: &'static str,
    reason: String,
}

impl InvalidConfig {
    pub(crate) fn new(field: &'static str, reason: impl Into<String>) -> Self {
        InvalidConfig {
            field,
            reason: reason.into(),
        }
    }

    /// The setter's name, e.g. `"max_concurrent_evals"`.
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// What is wrong with its value, e.g. `"must be at least 1 (it is 0)"`.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_wasmtime_error_stays_the_source_with_its_chain() {
        let cause = wasmtime::Error::msg("the root cause").context("the middle");
        let error = RuntimeError::compile(cause);
        assert_eq!(error.to_string(), "compiling the guest module failed");
        let source = error.source().expect("a source");
        assert_eq!(source.to_string(), "the middle");
        let root = source.source().expect("the root");
        assert_eq!(root.to_string(), "the root cause");
    }

    #[test]
    fn an_invalid_config_names_its_field() {
        let error = RuntimeError::InvalidConfig(InvalidConfig::new("epoch_tick", "is zero"));
        assert_eq!(
            error.to_string(),
            "invalid runtime configuration: `epoch_tick` is zero"
        );
        assert!(error.source().is_none());
    }
}
