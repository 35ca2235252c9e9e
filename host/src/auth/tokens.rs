//! Static bearer tokens (`server.auth.tokens`): each known only by its SHA-256, compared in
//! constant time.

use codemode_config::{TokenSecret, TokenSettings};
use codemode_policies::Caller;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::authenticate::{AuthError, AuthSetupError, Authenticate, bearer};

/// Callers identified by static bearer tokens.
pub struct StaticTokens {
    entries: Vec<(Caller, [u8; 32])>,
}

impl std::fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The hashes stay out of logs.
        let names: Vec<&str> = self.entries.iter().map(|(c, _)| c.name.as_str()).collect();
        f.debug_struct("StaticTokens")
            .field("names", &names)
            .finish()
    }
}

impl StaticTokens {
    /// The tokens of the config; an `env` entry reads its variable now (`getenv` is the
    /// environment lookup, so tests can supply their own).
    ///
    /// # Errors
    /// [`AuthSetupError::MissingEnv`] when a variable is unset or empty.
    pub fn new(
        settings: &[TokenSettings],
        getenv: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, AuthSetupError> {
        let mut entries = Vec::with_capacity(settings.len());
        for (i, token) in settings.iter().enumerate() {
            let hash = match &token.secret {
                TokenSecret::Sha256(hash) => *hash,
                TokenSecret::Env(var) => match getenv(var).filter(|v| !v.is_empty()) {
                    Some(value) => sha256(value.as_bytes()),
                    None => {
                        return Err(AuthSetupError::MissingEnv {
                            path: format!("server.auth.tokens[{i}].env"),
                            var: var.clone(),
                        });
                    }
                },
            };
            entries.push((
                Caller::new(token.name.clone(), token.permissions.iter().cloned()),
                hash,
            ));
        }
        Ok(StaticTokens { entries })
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

impl Authenticate for StaticTokens {
    fn authenticate(&self, headers: &http::HeaderMap) -> Result<Caller, AuthError> {
        let presented = sha256(bearer(headers)?.as_bytes());
        // Every entry is compared (no early exit), each in constant time.
        let mut found = None;
        for (caller, hash) in &self.entries {
            if bool::from(hash.ct_eq(&presented)) && found.is_none() {
                found = Some(caller);
            }
        }
        found
            .cloned()
            .ok_or_else(|| AuthError::Invalid("unknown token".into()))
    }

    fn enabled(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, value.parse().unwrap());
        h
    }

    #[test]
    fn tokens_by_hash_and_by_env() {
        let settings = codemode_policies::Config::from_json_str(&format!(
            r#"{{"server": {{"auth": {{"tokens": [{{"name": "ci", "sha256": "{}", "permissions": ["p"]}}, {{"name": "dev", "env": "DEV"}}]}}}}}}"#,
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" // sha256("test")
        ))
        .unwrap()
        .server
        .auth
        .unwrap();
        let codemode_config::AuthSettings::Tokens(list) = settings else {
            panic!()
        };
        let auth = StaticTokens::new(&list, &|v| (v == "DEV").then(|| "s3cret".into())).unwrap();
        assert_eq!(
            auth.authenticate(&headers("Bearer test")).unwrap(),
            Caller::new("ci", ["p"])
        );
        assert_eq!(
            auth.authenticate(&headers("bearer s3cret")).unwrap().name,
            "dev"
        );
        assert_eq!(
            auth.authenticate(&headers("Bearer nope")),
            Err(AuthError::Invalid("unknown token".into()))
        );
        assert_eq!(
            auth.authenticate(&http::HeaderMap::new()),
            Err(AuthError::Missing)
        );
        let missing = StaticTokens::new(&list, &|_| None).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "server.auth.tokens[1].env: the environment variable `DEV` is not set (or empty)"
        );
    }
}
