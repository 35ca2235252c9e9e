//! Who is calling over HTTP: request headers → a [`Caller`], or a refusal.
//!
//! Every HTTP surface (the MCP endpoint, the approval API and its page) authenticates through one
//! [`Authenticate`]; on stdio, and on unauthenticated loopback HTTP, the caller is
//! [`Caller::local`].

mod authenticate;
mod jwt;
mod layer;
mod tokens;

use std::sync::Arc;

use codemode_policies::AuthSettings;

pub use authenticate::{AuthError, AuthSetupError, Authenticate, NoAuth, bearer};
pub use jwt::{JwtAuth, LEEWAY_SECONDS};
pub use layer::{caller_of, require_auth};
pub use tokens::StaticTokens;

/// The authenticator `server.auth` describes ([`NoAuth`] without it), reading the environment
/// variables and files it names now.
///
/// # Errors
/// [`AuthSetupError`] when a variable is missing or the JWKS file is unusable.
pub fn from_settings(auth: Option<&AuthSettings>) -> Result<Arc<dyn Authenticate>, AuthSetupError> {
    let getenv = |var: &str| std::env::var(var).ok();
    Ok(match auth {
        None => Arc::new(NoAuth),
        Some(AuthSettings::Tokens(tokens)) => Arc::new(StaticTokens::new(tokens, &getenv)?),
        Some(AuthSettings::Jwt(jwt)) => Arc::new(JwtAuth::new(jwt, &getenv)?),
    })
}
