//! Who is calling over HTTP: request headers → a [`Caller`], or a refusal.
//!
//! Every HTTP surface (the MCP endpoint, the approval API and its page) authenticates through one
//! [`Authenticate`]; on stdio, and on unauthenticated loopback HTTP, the caller is
//! [`Caller::local`].

mod authenticate;
mod jwks;
mod jwt;
mod layer;
mod oauth;
mod tokens;

use std::sync::Arc;

use codemode_config::AuthSettings;

pub use authenticate::{AuthError, AuthSetupError, Authenticate, Credential, NoAuth};
pub use jwt::JwtAuth;
#[cfg(test)]
pub(crate) use jwt::LEEWAY_SECONDS;
pub use layer::{caller_of, require_auth};
pub(crate) use layer::{insufficient_scope, unauthorized};
pub use oauth::OAuthResource;
pub use tokens::StaticTokens;

/// The authenticator `server.auth` describes ([`NoAuth`] without it), reading the environment
/// variables and files it names now.
///
/// # Errors
/// [`AuthSetupError`] when a variable is missing or the JWKS file is unusable.
pub(crate) fn from_settings(
    auth: Option<&AuthSettings>,
) -> Result<Arc<dyn Authenticate>, AuthSetupError> {
    let getenv = |var: &str| std::env::var(var).ok();
    Ok(match auth {
        None => Arc::new(NoAuth),
        Some(AuthSettings::Tokens(tokens)) => Arc::new(StaticTokens::new(tokens, &getenv)?),
        Some(AuthSettings::Jwt(jwt)) => Arc::new(JwtAuth::new(jwt, &getenv)?),
        Some(AuthSettings::OAuth(oauth)) => Arc::new(OAuthResource::new(oauth)),
    })
}

/// `server.auth.jwt` with issuer `iss`, audience `aud` and the other keys of `keys`.
#[cfg(test)]
pub(crate) fn jwt_settings(keys: serde_json::Value) -> codemode_config::JwtSettings {
    let mut jwt = serde_json::json!({"issuer": "iss", "audience": "aud"});
    if let (Some(jwt), serde_json::Value::Object(keys)) = (jwt.as_object_mut(), keys) {
        jwt.extend(keys);
    }
    let config = serde_json::json!({"server": {"auth": {"jwt": jwt}}}).to_string();
    match codemode_policies::Config::from_json_str(&config)
        .expect("a JWT config")
        .server
        .auth
    {
        Some(AuthSettings::Jwt(jwt)) => jwt,
        other => panic!("not a JWT config: {other:?}"),
    }
}
