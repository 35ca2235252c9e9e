//! Errors building a [`crate::Runtime`]. (Eval failures are data: [`crate::EvalError`].)

/// Why a [`crate::Runtime`] could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The wasmtime engine rejected the configuration.
    #[error("configuring the WebAssembly engine failed: {0}")]
    Engine(String),
    /// The guest module did not compile.
    #[error("compiling the guest module failed: {0}")]
    Compile(String),
    /// The guest's imports could not be satisfied.
    #[error("linking the guest module failed: {0}")]
    Link(String),
}
