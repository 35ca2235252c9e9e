//! The [`Authenticate`] trait every HTTP surface checks callers with, and why it refuses.

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
    /// The token cannot be checked now (the authorization server's keys cannot be fetched):
    /// HTTP `503`, the request may be retried.
    #[error("cannot check the token now: {0}")]
    Unavailable(String),
}

/// An accepted credential: the caller it speaks for, and until when it is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Credential {
    /// Who is calling.
    pub caller: Caller,
    /// When the credential stops being accepted (a JWT's `exp` plus
    /// [`super::LEEWAY_SECONDS`]); `None`: it does not expire (a static token, no
    /// authentication). Whatever a request holds open past it (an approval event stream) ends
    /// then.
    pub expires_at: Option<std::time::SystemTime>,
}

/// Turns a request's headers into the caller it speaks for.
pub trait Authenticate: Send + Sync {
    /// The caller presenting `headers`.
    ///
    /// # Errors
    /// [`AuthError`] when the request must be refused.
    fn authenticate(&self, headers: &http::HeaderMap) -> Result<Caller, AuthError>;

    /// The caller presenting `headers` with its credential's expiry. By default the credential
    /// does not expire.
    ///
    /// # Errors
    /// As [`Authenticate::authenticate`].
    fn credential(&self, headers: &http::HeaderMap) -> Result<Credential, AuthError> {
        Ok(Credential {
            caller: self.authenticate(headers)?,
            expires_at: None,
        })
    }

    /// Gets ready to check `headers` (fetches the signing keys a token needs); called before
    /// [`Authenticate::credential`] by the HTTP layers. By default there is nothing to do.
    fn prepare<'a>(&'a self, _headers: &'a http::HeaderMap) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(std::future::ready(()))
    }

    /// The URL of this server's protected-resource metadata (RFC 9728), named in every
    /// challenge; `None` without OAuth.
    fn resource_metadata(&self) -> Option<&str> {
        None
    }

    /// The scopes a token would need to be granted every one of `permissions` (as few as it
    /// takes, picked greedily), for a scope challenge (`403 insufficient_scope`); `None` when
    /// scopes grant nothing here (no OAuth) or no scopes together grant them all.
    fn scopes_granting(&self, _permissions: &[String]) -> Option<Vec<String>> {
        None
    }

    /// Routes served without authentication (the protected-resource metadata).
    fn public_routes(&self) -> Option<axum::Router> {
        None
    }

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

/// Why `server.auth` cannot be put in force (the server refuses to start).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthSetupError {
    /// An environment variable the config names is unset or empty.
    #[error("{path}: the environment variable `{var}` is not set (or empty)")]
    MissingEnv {
        /// The config path naming the variable.
        path: String,
        /// The variable.
        var: String,
    },
    /// The JWKS file cannot be read or holds no usable key.
    #[error("server.auth.jwt.jwksFile: {file}: {message}")]
    Jwks {
        /// The file.
        file: String,
        /// What is wrong with it.
        message: String,
    },
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case).
///
/// # Errors
/// [`AuthError::Missing`] without the header; [`AuthError::Invalid`] for another scheme or a
/// header that is not text.
pub fn bearer(headers: &http::HeaderMap) -> Result<&str, AuthError> {
    let Some(value) = headers.get(http::header::AUTHORIZATION) else {
        return Err(AuthError::Missing);
    };
    let text = value
        .to_str()
        .map_err(|_| AuthError::Invalid("the Authorization header is not text".into()))?;
    match text.split_once(' ') {
        Some((scheme, token))
            if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() =>
        {
            Ok(token.trim())
        }
        _ => Err(AuthError::Invalid(
            "expected `Authorization: Bearer <token>`".into(),
        )),
    }
}
