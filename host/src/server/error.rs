//! [`ServeError`]: why a server did not start, or stopped.

use std::net::SocketAddr;

use codemode_store::StoreError;

use crate::{approvals, auth};

/// Why a server did not start, or stopped with an error. Each message names what to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The listener's options are unsafe or malformed (an unauthenticated non-loopback
    /// address, a bad allowed origin).
    #[error("{0}")]
    Refused(String),
    /// `server.auth` cannot be set up (a missing key file or environment variable).
    #[error("{0}")]
    Auth(auth::AuthSetupError),
    /// The sandbox's engine cannot start: the error and its causes (wasmtime's, say).
    #[error("{0}")]
    Runtime(String),
    /// The approval API's listener cannot be bound.
    #[error("{0}")]
    Approvals(String),
    /// The durable store cannot be opened or written.
    #[error("the durable store: {0}")]
    Store(StoreError),
    /// The MCP listener cannot be bound.
    #[error("cannot listen on {addr}: {error}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why it could not be bound.
        error: std::io::Error,
    },
    /// The transport failed while serving.
    #[error("{0}")]
    Transport(String),
}

impl From<auth::AuthSetupError> for ServeError {
    fn from(e: auth::AuthSetupError) -> Self {
        ServeError::Auth(e)
    }
}

impl From<approvals::http::BindError> for ServeError {
    fn from(e: approvals::http::BindError) -> Self {
        ServeError::Approvals(e.to_string())
    }
}

impl From<StoreError> for ServeError {
    fn from(e: StoreError) -> Self {
        ServeError::Store(e)
    }
}

impl From<codemode_runtime::RuntimeError> for ServeError {
    fn from(e: codemode_runtime::RuntimeError) -> Self {
        let mut message = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            message.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        ServeError::Runtime(message)
    }
}
