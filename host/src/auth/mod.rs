//! Who is calling over HTTP: request headers → a [`Caller`], or a refusal.
//!
//! Every HTTP surface (the MCP endpoint, the approval API and its page) authenticates through one
//! [`Authenticate`]; on stdio, and on unauthenticated loopback HTTP, the caller is
//! [`Caller::local`].

use codemode_policies::Caller;

/// Why a request was refused before any handling (HTTP `401` with `WWW-Authenticate: Bearer`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No `Authorization: Bearer …` header.
    #[error("a bearer token is required")]
    Missing,
    /// A token was given but is not valid (unknown, expired, wrong issuer or audience…).
    #[error("invalid token: {0}")]
    Invalid(String),
}

/// Turns a request's headers into the caller it speaks for.
pub trait Authenticate: Send + Sync {
    /// The caller presenting `headers`.
    ///
    /// # Errors
    /// [`AuthError`] when the request must be refused.
    fn authenticate(&self, headers: &http::HeaderMap) -> Result<Caller, AuthError>;

    /// Whether this authenticator checks anything (`false`: every request is [`Caller::local`]).
    fn enabled(&self) -> bool;
}

/// No authentication: every request is [`Caller::local`] (stdio, loopback without `auth`).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAuth;

impl Authenticate for NoAuth {
    fn authenticate(&self, _headers: &http::HeaderMap) -> Result<Caller, AuthError> {
        Ok(Caller::local())
    }

    fn enabled(&self) -> bool {
        false
    }
}
