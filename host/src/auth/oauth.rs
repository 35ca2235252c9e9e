//! codemode as an OAuth 2.1 protected resource (`server.auth.oauth`, MCP authorization): its
//! RFC 9728 metadata names the authorization servers; a client without a token is answered
//! `401` with `WWW-Authenticate: Bearer resource_metadata="…"` and logs in there; its access
//! tokens are JWTs verified with the issuer's published keys ([`super::jwks`]). Opaque tokens
//! are refused (no introspection).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use codemode_config::OAuthResourceSettings;
use codemode_policies::Caller;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::authenticate::{AuthError, Authenticate, Credential, bearer};
use super::jwks::IssuerKeys;
use super::jwt;

/// RFC 9728's well-known path of protected-resource metadata.
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Callers holding access tokens from the configured authorization servers.
pub struct OAuthResource {
    resource: String,
    /// The metadata's URL (the path-based form of RFC 9728 §3.1), named in every challenge.
    metadata_url: String,
    /// The metadata's path on this server with the resource's path appended (`/mcp`), also
    /// served at the bare well-known path.
    metadata_path: String,
    scope_permissions: BTreeMap<String, Vec<String>>,
    issuers: BTreeMap<String, IssuerKeys>,
    metadata: Arc<Value>,
}

impl std::fmt::Debug for OAuthResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthResource")
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl OAuthResource {
    /// The protected resource `settings` describe; nothing is fetched before a token arrives.
    pub fn new(settings: &OAuthResourceSettings) -> Self {
        codemode_upstream::crypto::install();
        let path = url::Url::parse(&settings.resource)
            .map(|u| u.path().trim_end_matches('/').to_string())
            .unwrap_or_default();
        let origin = url::Url::parse(&settings.resource)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default();
        let mut metadata = json!({
            "resource": settings.resource,
            "authorization_servers": settings.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        // Only scopes that grant something are worth asking for.
        if !settings.scope_permissions.is_empty() {
            metadata["scopes_supported"] =
                json!(settings.scope_permissions.keys().collect::<Vec<_>>());
        }
        OAuthResource {
            resource: settings.resource.clone(),
            metadata_url: format!("{origin}{METADATA_PATH}{path}"),
            metadata_path: format!("{METADATA_PATH}{path}"),
            scope_permissions: settings.scope_permissions.clone(),
            issuers: settings
                .authorization_servers
                .iter()
                .map(|issuer| (issuer.clone(), IssuerKeys::new(issuer)))
                .collect(),
            metadata: Arc::new(metadata),
        }
    }

    /// The permissions the space-separated `scope` claim grants.
    fn permissions(&self, claims: &BTreeMap<String, Value>) -> Result<Vec<String>, AuthError> {
        let scopes = match claims.get("scope") {
            None | Some(Value::Null) => "",
            Some(Value::String(s)) => s.as_str(),
            Some(_) => return Err(AuthError::Invalid("`scope` must be a string".into())),
        };
        let granted: BTreeSet<&String> = scopes
            .split_whitespace()
            .filter_map(|scope| self.scope_permissions.get(scope))
            .flatten()
            .collect();
        Ok(granted.into_iter().cloned().collect())
    }

    /// The configured issuer `token` claims to come from (unverified: it only picks the keys
    /// to verify with, and `decode` checks it again).
    fn issuer_of(&self, token: &str) -> Result<&IssuerKeys, AuthError> {
        let claims: BTreeMap<String, Value> =
            jsonwebtoken::dangerous::insecure_decode_claims(token).map_err(jwt::invalid)?;
        claims
            .get("iss")
            .and_then(Value::as_str)
            .and_then(|iss| self.issuers.get(iss))
            .ok_or_else(|| AuthError::Invalid("wrong issuer".into()))
    }
}

/// Refuses a token that is not a signed JWT (three base64url parts) with a clear reason.
fn signed_jwt(token: &str) -> Result<&str, AuthError> {
    if token.split('.').count() != 3 {
        return Err(AuthError::Invalid(
            "not a JWT: only JWT access tokens are accepted".into(),
        ));
    }
    Ok(token)
}

impl Authenticate for OAuthResource {
    fn authenticate(&self, headers: &http::HeaderMap) -> Result<Caller, AuthError> {
        self.credential(headers).map(|c| c.caller)
    }

    fn credential(&self, headers: &http::HeaderMap) -> Result<Credential, AuthError> {
        let token = signed_jwt(bearer(headers)?)?;
        let header = jsonwebtoken::decode_header(token).map_err(jwt::invalid)?;
        jwt::refuse_crit(&header)?;
        let issuer = self.issuer_of(token)?;
        let Some(keys) = issuer.current() else {
            return Err(AuthError::Unavailable(
                "the authorization server's signing keys cannot be fetched now".into(),
            ));
        };
        let (key, alg) = jwt::select(&keys, &header)?;
        let claims = jwt::decode(
            token,
            key,
            &jwt::validation(alg, issuer.issuer(), &self.resource),
        )?;
        jwt::credential(&claims, self.permissions(&claims)?)
    }

    fn prepare<'a>(&'a self, headers: &'a http::HeaderMap) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Ok(token) = bearer(headers).and_then(signed_jwt) else {
                return;
            };
            let (Ok(header), Ok(issuer)) =
                (jsonwebtoken::decode_header(token), self.issuer_of(token))
            else {
                return;
            };
            issuer.ensure(header.kid.as_deref()).await;
        })
    }

    fn resource_metadata(&self) -> Option<&str> {
        Some(&self.metadata_url)
    }

    fn scopes_granting(&self, permissions: &[String]) -> Option<Vec<String>> {
        cover(&self.scope_permissions, permissions)
    }

    fn public_routes(&self) -> Option<axum::Router> {
        let metadata = self.metadata.clone();
        let serve = move || {
            let metadata = metadata.clone();
            async move {
                (
                    [
                        (http::header::CONTENT_TYPE, "application/json"),
                        (http::header::CACHE_CONTROL, "max-age=300"),
                    ],
                    metadata.to_string(),
                )
            }
        };
        let mut router =
            axum::Router::new().route(METADATA_PATH, axum::routing::get(serve.clone()));
        if self.metadata_path != METADATA_PATH {
            router = router.route(&self.metadata_path, axum::routing::get(serve));
        }
        Some(router)
    }

    fn enabled(&self) -> bool {
        true
    }
}

/// Scopes of `scopes` that together grant every one of `permissions`: each time the one granting
/// the most of those still missing, on a tie the one granting least in all (least privilege),
/// then the first by name; `None` when some permission is granted by no scope.
fn cover(scopes: &BTreeMap<String, Vec<String>>, permissions: &[String]) -> Option<Vec<String>> {
    let mut missing: BTreeSet<&String> = permissions.iter().collect();
    let mut chosen = Vec::new();
    while !missing.is_empty() {
        let grants = |granted: &Vec<String>| granted.iter().filter(|p| missing.contains(p)).count();
        let (scope, granted) = scopes
            .iter()
            .min_by_key(|(_, granted)| (std::cmp::Reverse(grants(granted)), granted.len()))
            .filter(|(_, granted)| grants(granted) > 0)?;
        for permission in granted {
            missing.remove(permission);
        }
        chosen.push(scope.clone());
    }
    Some(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_challenge_names_few_scopes_that_grant_everything_needed() {
        let scopes: BTreeMap<String, Vec<String>> = serde_json::from_value(json!({
            "admin": ["approve", "payments", "ops"], "ops": ["ops"], "pay": ["payments"],
            "read": []}))
        .unwrap();
        let names = |permissions: &[&str]| {
            let permissions: Vec<String> = permissions.iter().map(|p| p.to_string()).collect();
            cover(&scopes, &permissions)
        };
        assert_eq!(names(&["ops"]), Some(vec!["ops".to_string()]));
        assert_eq!(
            names(&["payments", "ops", "approve"]),
            Some(vec!["admin".to_string()])
        );
        assert_eq!(names(&[]), Some(vec![]));
        assert_eq!(names(&["ops", "nobody grants this"]), None);
        let narrow: BTreeMap<String, Vec<String>> =
            serde_json::from_value(json!({"ops": ["ops"], "pay": ["payments"]})).unwrap();
        let both = ["payments".to_string(), "ops".to_string()];
        assert_eq!(
            cover(&narrow, &both),
            Some(vec!["ops".to_string(), "pay".to_string()])
        );
    }

    fn resource(scopes: Value) -> OAuthResource {
        let config = json!({"server": {"auth": {"oauth": {
            "authorizationServers": ["https://id.example/realms/a"],
            "resource": "https://codemode.example/team/mcp", "scopePermissions": scopes}}}});
        let config = codemode_policies::Config::from_json_str(&config.to_string()).unwrap();
        let Some(codemode_config::AuthSettings::OAuth(settings)) = config.server.auth else {
            panic!("oauth settings")
        };
        OAuthResource::new(&settings)
    }

    #[test]
    fn scopes_grant_the_permissions_they_map_to_and_nothing_else() {
        let auth = resource(json!({"read": [], "ops": ["approve", "payments"],
            "pay": ["payments"]}));
        let permissions =
            |scope: Value| auth.permissions(&BTreeMap::from([("scope".to_string(), scope)]));
        assert_eq!(
            permissions(json!("ops pay unknown read")),
            Ok(vec!["approve".to_string(), "payments".to_string()])
        );
        assert_eq!(permissions(json!("unknown")), Ok(vec![]));
        assert_eq!(
            permissions(json!(["ops"])),
            Err(AuthError::Invalid("`scope` must be a string".into()))
        );
        assert_eq!(auth.permissions(&BTreeMap::new()), Ok(vec![]));
    }

    #[test]
    fn the_metadata_url_is_the_path_based_form_of_the_resource() {
        let auth = resource(json!({"ops": ["approve"]}));
        assert_eq!(
            auth.resource_metadata(),
            Some("https://codemode.example/.well-known/oauth-protected-resource/team/mcp")
        );
        assert_eq!(
            *auth.metadata,
            json!({"resource": "https://codemode.example/team/mcp",
                "authorization_servers": ["https://id.example/realms/a"],
                "bearer_methods_supported": ["header"], "scopes_supported": ["ops"]})
        );
    }
}
