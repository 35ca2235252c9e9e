//! Where a login stands, for `codemode auth status`.

use super::record::{SavedLogin, now_secs};

/// Where one login stands, for `codemode auth status`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoginStatus {
    /// The upstream.
    pub server: String,
    /// Its state.
    pub state: LoginState,
    /// When the access token expires (seconds since the epoch), if it said.
    pub expires_at: Option<u64>,
    /// The scopes granted.
    pub scopes: Vec<String>,
}

/// The state of one login.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginState {
    /// Tokens are there (an expired access token with a refresh token counts: it is renewed on
    /// the next call).
    LoggedIn,
    /// No tokens.
    NeedsLogin,
    /// The access token expired and there is no refresh token.
    Expired,
}

impl LoginStatus {
    /// `name  logged in  expires 2026-11-28T10:00:00.000Z  scopes a b`, one line (fields
    /// apart by two spaces).
    pub fn line(&self) -> String {
        let state = match self.state {
            LoginState::LoggedIn => "logged in",
            LoginState::NeedsLogin => "needs login",
            LoginState::Expired => "expired",
        };
        let expiry = match self.expires_at {
            Some(at) => format!("expires {}", rfc3339(at)),
            None if self.state == LoginState::NeedsLogin => "-".into(),
            None => "no expiry given".into(),
        };
        let scopes = if self.scopes.is_empty() {
            "no scopes".to_string()
        } else {
            format!("scopes {}", self.scopes.join(" "))
        };
        codemode_policies::neutralize(&format!("{}  {state}  {expiry}  {scopes}", self.server))
    }
}

fn rfc3339(secs: u64) -> String {
    // The calendar's end (9999-12-31T23:59:59Z): a server may say any lifetime.
    const LAST: u64 = 253_402_300_799;
    if secs > LAST {
        return "after the year 9999".into();
    }
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    codemode_policies::AuditRecord::rfc3339_utc(at)
}

pub(crate) fn status_of(server: &str, saved: Option<&SavedLogin>) -> LoginStatus {
    let scopes = saved
        .and_then(|s| s.credentials.as_ref())
        .map(|c| c.granted_scopes.clone())
        .unwrap_or_default();
    let expires_at = saved.and_then(SavedLogin::expires_at);
    let state = match saved {
        Some(s) if s.has_tokens() => {
            let expired = expires_at.is_some_and(|at| at <= now_secs());
            if expired && !s.has_refresh_token() {
                LoginState::Expired
            } else {
                LoginState::LoggedIn
            }
        }
        _ => LoginState::NeedsLogin,
    };
    LoginStatus {
        server: server.to_string(),
        state,
        expires_at,
        scopes,
    }
}

#[cfg(test)]
mod tests {
    use super::rfc3339;

    /// Red-team finding: a token "expiring" at u64::MAX seconds panicked `auth status`.
    #[test]
    fn any_expiry_a_server_says_is_shown() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(253_402_300_799), "9999-12-31T23:59:59.000Z");
        assert_eq!(rfc3339(u64::MAX), "after the year 9999");
    }
}
