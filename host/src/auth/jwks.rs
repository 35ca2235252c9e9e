//! The signing keys of an authorization server, found by discovery: its RFC 8414 metadata
//! (`/.well-known/oauth-authorization-server`), then its OpenID Connect configuration
//! (`/.well-known/openid-configuration`), name a `jwks_uri`; the key set there is kept, and
//! fetched again when a token names a key it lacks — at most once per [`REFETCH_EVERY`], so
//! tokens with made-up key ids cannot make codemode hammer the authorization server.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use serde_json::Value;

use super::jwt::{KeyMap, key_map};

/// The least time between two fetches caused by a token naming an unknown key.
pub(crate) const REFETCH_EVERY: Duration = Duration::from_secs(60);
/// The least time between two attempts while no key has ever been fetched (the authorization
/// server is down or misconfigured): requests meanwhile are refused at once.
const RETRY_UNAVAILABLE: Duration = Duration::from_secs(5);
/// How long one discovery and key fetch may take in all; requests waiting on it are answered
/// (`503`) when it gives up.
const FETCH_WITHIN: Duration = Duration::from_secs(10);

/// One authorization server's keys, fetched on demand.
pub(super) struct IssuerKeys {
    issuer: String,
    keys: RwLock<Option<Arc<KeyMap>>>,
    /// Held while fetching: one fetch at a time, the others wait for its result.
    fetching: tokio::sync::Mutex<Attempts>,
}

#[derive(Default)]
struct Attempts {
    /// The last fetch caused by an unknown key id, once keys were known.
    refetched: Option<Instant>,
    /// The last failed fetch while no key was known.
    failed: Option<Instant>,
}

impl IssuerKeys {
    pub(super) fn new(issuer: &str) -> Self {
        IssuerKeys {
            issuer: issuer.to_string(),
            keys: RwLock::new(None),
            fetching: tokio::sync::Mutex::new(Attempts::default()),
        }
    }

    /// The issuer URL.
    pub(super) fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The keys known now (`None`: never fetched successfully).
    pub(super) fn current(&self) -> Option<Arc<KeyMap>> {
        self.keys
            .read()
            .map(|k| k.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    fn knows(&self, kid: Option<&str>) -> bool {
        self.current().is_some_and(|keys| {
            keys.contains_key(&kid.map(str::to_string)) || (kid.is_none() && keys.len() == 1)
        })
    }

    /// Makes sure the key `kid` is known if the authorization server has it, fetching the key
    /// set when allowed (see the module docs). Never fails: a token whose key is still unknown
    /// is refused by the verification that follows.
    pub(super) async fn ensure(&self, kid: Option<&str>) {
        if self.knows(kid) {
            return;
        }
        let mut attempts = self.fetching.lock().await;
        // Another request may have fetched it while this one waited.
        if self.knows(kid) {
            return;
        }
        let known = self.current().is_some();
        let recent = |at: Option<Instant>, within| at.is_some_and(|t| t.elapsed() < within);
        if (known && recent(attempts.refetched, REFETCH_EVERY))
            || (!known && recent(attempts.failed, RETRY_UNAVAILABLE))
        {
            return;
        }
        let fetched = tokio::time::timeout(FETCH_WITHIN, fetch_keys(&self.issuer))
            .await
            .unwrap_or_else(|_| Err(format!("took over {} s", FETCH_WITHIN.as_secs())));
        if known {
            attempts.refetched = Some(Instant::now());
        }
        match fetched {
            Ok(keys) => {
                tracing::info!(issuer = %self.issuer, keys = keys.len(), "fetched the authorization server's signing keys");
                attempts.failed = None;
                let mut slot = self.keys.write().unwrap_or_else(|p| p.into_inner());
                *slot = Some(Arc::new(keys));
            }
            Err(why) => {
                tracing::warn!(issuer = %self.issuer, "cannot fetch the authorization server's signing keys: {why}");
                if !known {
                    attempts.failed = Some(Instant::now());
                }
            }
        }
    }
}

/// Discovers `issuer`'s `jwks_uri` and reads the key set there.
async fn fetch_keys(issuer: &str) -> Result<KeyMap, String> {
    let http = codemode_upstream::oauth::oauth_http(issuer).map_err(|e| e.message)?;
    let mut tried = Vec::new();
    let mut jwks_uri = None;
    for url in metadata_urls(issuer)? {
        match get_json(&http, &url).await {
            Ok(metadata) => {
                // RFC 8414 §3.3 / OpenID Discovery §4.3: the metadata is the issuer's own.
                if metadata.get("issuer").and_then(Value::as_str) != Some(issuer) {
                    tried.push(format!("{url}: names another issuer"));
                    continue;
                }
                match metadata.get("jwks_uri").and_then(Value::as_str) {
                    Some(uri) => {
                        jwks_uri = Some(uri.to_string());
                        break;
                    }
                    None => tried.push(format!("{url}: no `jwks_uri`")),
                }
            }
            Err(why) => tried.push(format!("{url}: {why}")),
        }
    }
    let Some(jwks_uri) = jwks_uri else {
        return Err(format!(
            "no metadata naming a `jwks_uri` ({})",
            tried.join("; ")
        ));
    };
    let set: JwkSet = serde_json::from_value(get_json(&http, &jwks_uri).await?)
        .map_err(|e| format!("{jwks_uri}: not a JWKS: {e}"))?;
    key_map(&set).map_err(|why| format!("{jwks_uri}: {why}"))
}

/// Where `issuer`'s metadata may be: RFC 8414 §3.1 inserts the well-known path before the
/// issuer's path; OpenID Connect appends it.
fn metadata_urls(issuer: &str) -> Result<Vec<String>, String> {
    let url = url::Url::parse(issuer).map_err(|e| format!("not a URL: {e}"))?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    Ok(vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ])
}

async fn get_json(http: &reqwest::Client, url: &str) -> Result<Value, String> {
    let response = http
        .get(url)
        .header(http::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| e.without_url().to_string())?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status().as_u16()));
    }
    let body = codemode_upstream::oauth::read_bounded(response)
        .await
        .map_err(|e| e.to_string())?;
    serde_json::from_slice(&body).map_err(|e| format!("not JSON: {e}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn metadata_is_looked_for_by_rfc_8414_then_openid() {
        assert_eq!(
            super::metadata_urls("https://id.example/realms/a/").unwrap(),
            [
                "https://id.example/.well-known/oauth-authorization-server/realms/a",
                "https://id.example/realms/a/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            super::metadata_urls("http://127.0.0.1:9").unwrap(),
            [
                "http://127.0.0.1:9/.well-known/oauth-authorization-server",
                "http://127.0.0.1:9/.well-known/openid-configuration",
            ]
        );
    }
}
