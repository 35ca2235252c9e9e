//! [`OAuthError`], and what of an authorization server's words an error may repeat.

use rmcp::transport::auth::AuthError;

/// What went wrong logging in to an upstream; the message names the upstream and never holds a
/// secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("upstream server `{server}`: {message}")]
pub struct OAuthError {
    /// The upstream.
    pub server: String,
    /// What happened.
    pub message: String,
}

impl OAuthError {
    pub(crate) fn new(server: &str, message: impl Into<String>) -> Self {
        OAuthError {
            server: server.to_string(),
            message: message.into(),
        }
    }

    pub(super) fn auth(server: &str, e: &AuthError) -> Self {
        OAuthError::new(server, describe(e))
    }
}

/// rmcp's error, said for people (its texts already leave secrets out).
///
/// Errors that carry what the authorization server said (its `error_description`, a body) are
/// said in codemode's words with the server's OAuth error code only: a hostile server could
/// echo a secret sent to it (a client secret, a refresh token, a PKCE verifier) into its words,
/// and these messages reach scripts, tool descriptions and logs.
pub(crate) fn describe(e: &AuthError) -> String {
    let code = error_code(&e.to_string())
        .map(|c| format!(" (`{c}`)"))
        .unwrap_or_default();
    let what = match e {
        AuthError::TokenExchangeFailed(_) => "the token endpoint refused the authorization code",
        AuthError::TokenRefreshFailed(_) => "refreshing the access token failed",
        AuthError::TokenRefreshRejected(_) => "the authorization server refused the refresh token",
        AuthError::RegistrationFailed(_) => "the authorization server refused the registration",
        AuthError::AuthorizationFailed(_) => "the authorization failed",
        AuthError::ClientCredentialsError(_) => "the client-credentials grant failed",
        AuthError::OAuthError(_) | AuthError::InternalError(_) | AuthError::InvalidScope(_) => {
            "the OAuth exchange failed"
        }
        AuthError::MetadataError(_) => "the authorization server's metadata is not usable",
        AuthError::InvalidTokenType(_) => "the token endpoint gave a token of another type",
        AuthError::CredentialStoreError(message) => {
            return format!(
                "the login store failed: {}",
                codemode_policies::neutralize(message)
            );
        }
        other => return codemode_policies::neutralize(&other.to_string()),
    };
    format!("{what}{code}")
}

/// The OAuth error code in a text such as `Server returned error response: invalid_client: …`
/// (only the code: lower-case letters and `_`).
pub(crate) fn error_code(text: &str) -> Option<&str> {
    let rest = &text[text.find("error response: ")? + "error response: ".len()..];
    let code = rest
        .split(|c: char| !(c.is_ascii_lowercase() || c == '_'))
        .next()?;
    (!code.is_empty()).then_some(code)
}

/// An OAuth error code as a server sent it, if it is one (lower-case letters and `_`), else
/// `unknown`: nothing else of the server's words is repeated.
pub(crate) fn safe_code(code: &str) -> &str {
    let plain = !code.is_empty() && code.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    if plain { code } else { "unknown" }
}

#[cfg(test)]
mod tests {
    use rmcp::transport::auth::AuthError;

    use super::describe;

    /// Red-team finding: what the authorization server said (which may echo a secret sent to
    /// it) reached scripts and tool descriptions through rmcp's error texts.
    #[test]
    fn the_servers_words_are_not_repeated_only_its_error_code() {
        let echoed = "Server returned error response: invalid_grant: refresh_token=REFRESH-1&client_secret=S";
        for (error, said) in [
            (
                AuthError::TokenRefreshFailed(echoed.into()),
                "refreshing the access token failed (`invalid_grant`)",
            ),
            (
                AuthError::TokenExchangeFailed(echoed.into()),
                "the token endpoint refused the authorization code (`invalid_grant`)",
            ),
            (
                AuthError::RegistrationFailed("Dynamic registration failed: body S".into()),
                "the authorization server refused the registration",
            ),
            (
                AuthError::InternalError("Authorization state not found".into()),
                "the OAuth exchange failed",
            ),
        ] {
            assert_eq!(describe(&error), said);
        }
    }
}
