//! Finding an upstream's authorization server: rmcp's discovery, with MCP 2025-03-26's
//! issuer-with-a-path accepted within the server's own origin.

use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationMetadata};

use super::error::{OAuthError, describe};
use super::http::{oauth_http, read_bounded};

/// Discovers the authorization server of `url` (from `challenge` when there is one) and gives
/// its metadata to `manager`.
///
/// A server of MCP's 2025-03-26 revision has no protected-resource metadata and is its own
/// authorization server, whose metadata sits at its origin's root and may name an issuer with a
/// path (`https://host/oauth`) that RFC 8414's check refuses; that one mismatch, within the
/// server's own origin, is accepted, with a warning.
pub(crate) async fn discover(
    server: &str,
    url: &str,
    manager: &mut AuthorizationManager,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, OAuthError> {
    let failed =
        |e: &AuthError| OAuthError::new(server, format!("OAuth discovery failed: {}", describe(e)));
    let metadata = match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => resolution.metadata,
        Err(e) => {
            let AuthError::AuthorizationServerMismatch {
                expected_issuer,
                received_issuer,
            } = &e
            else {
                return Err(failed(&e));
            };
            let origin = origin_of(url);
            if origin.is_none()
                || origin_of(expected_issuer) != origin
                || origin_of(received_issuer) != origin
            {
                return Err(failed(&e));
            }
            let metadata = root_metadata(server, url)
                .await?
                .ok_or_else(|| failed(&e))?;
            tracing::warn!(server, issuer = %received_issuer,
                "the authorization server's metadata names an issuer with a path (MCP 2025-03-26 style); accepted within the server's own origin");
            metadata
        }
    };
    manager.set_metadata(metadata.clone());
    Ok(metadata)
}

/// `scheme://host:port` of `url`.
fn origin_of(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()
        .map(|u| u.origin().ascii_serialization())
}

/// The authorization-server metadata at the root of `url`'s origin, if it is there.
async fn root_metadata(
    server: &str,
    url: &str,
) -> Result<Option<AuthorizationMetadata>, OAuthError> {
    let Some(origin) = origin_of(url) else {
        return Ok(None);
    };
    let response = oauth_http(server)?
        .get(format!("{origin}/.well-known/oauth-authorization-server"))
        .send()
        .await
        .map_err(|e| OAuthError::new(server, format!("OAuth discovery failed: {e}")))?;
    if !response.status().is_success() {
        return Ok(None);
    }
    let body = read_bounded(response).await.map_err(|why| {
        OAuthError::new(
            server,
            format!("OAuth discovery failed: the metadata: {why}"),
        )
    })?;
    Ok(serde_json::from_slice(&body).ok())
}

/// The server's challenge to a request without a token (`None` when it took the request):
/// how `codemode auth login` learns where to log in.
pub(crate) async fn probe(server: &str, url: &str) -> Result<Option<String>, OAuthError> {
    let http = oauth_http(server)?;
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "codemode", "version": env!("CARGO_PKG_VERSION")}}
    });
    let response = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .map_err(|e| {
            let message = format!("could not reach {url}: {e}");
            OAuthError::new(
                server,
                crate::url_secrets::without_url_secrets(&message, url),
            )
        })?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return Ok(None);
    }
    Ok(response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string))
}

#[cfg(test)]
mod tests {
    /// Red-team finding (high): the metadata read here had no bound; a server answering without
    /// end took gigabytes.
    #[tokio::test]
    async fn root_metadata_is_read_within_a_bound() {
        let base = super::super::http::answering("200 OK", vec![b' '; 1 << 20]).await;
        let error = super::root_metadata("api", &format!("{base}/mcp"))
            .await
            .expect_err("too large");
        assert_eq!(
            error.to_string(),
            "upstream server `api`: OAuth discovery failed: the metadata: it is over 65536 bytes"
        );
    }
}
