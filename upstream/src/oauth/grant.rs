//! The client-credentials grant (OAuth 2.1 §4.2, MCP's SEP-1046) for headless use: codemode
//! gets its own tokens with a client secret (`client_secret_basic` or `client_secret_post`, as
//! the server's metadata says) or a private key (`private_key_jwt`, RFC 7523). Written here
//! rather than taken from rmcp: rmcp sends secrets only in the body, and its signed assertions
//! need a second jsonwebtoken provider.

use codemode_config::{SigningAlgorithm, UpstreamOAuth};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rmcp::transport::auth::{AuthorizationMetadata, OAuthTokenResponse, StoredCredentials};
use serde_json::{Value, json};

use super::error::{OAuthError, safe_code};
use super::http::{oauth_http, read_bounded};
use super::record::now_secs;

/// How long a client assertion is valid.
const ASSERTION_LIFETIME: u64 = 300;

/// How the client proves who it is at the token endpoint.
enum ClientAuth<'a> {
    Basic(&'a str),
    Post(&'a str),
    Jwt(String),
}

/// Runs the grant for `resource` and returns the credentials to save.
pub(crate) async fn client_credentials(
    server: &str,
    resource: &str,
    oauth: &UpstreamOAuth,
    metadata: &AuthorizationMetadata,
) -> Result<StoredCredentials, OAuthError> {
    let fail = |message: String| OAuthError::new(server, message);
    let client_id = oauth
        .client_id
        .as_deref()
        .ok_or_else(|| fail("the client-credentials grant needs `clientId`".into()))?;
    let auth = client_auth(server, client_id, oauth, metadata)?;
    let mut form: Vec<(&str, String)> = vec![
        ("grant_type", "client_credentials".into()),
        ("resource", resource.to_string()),
    ];
    let scopes = if oauth.scopes.is_empty() {
        metadata.scopes_supported.clone().unwrap_or_default()
    } else {
        oauth.scopes.clone()
    };
    if !scopes.is_empty() {
        form.push(("scope", scopes.join(" ")));
    }
    let http = oauth_http(server)?;
    let mut request = http.post(&metadata.token_endpoint);
    match &auth {
        ClientAuth::Basic(secret) => {
            request = request.basic_auth(form_encode(client_id), Some(form_encode(secret)));
        }
        ClientAuth::Post(secret) => {
            form.push(("client_id", client_id.to_string()));
            form.push(("client_secret", secret.to_string()));
        }
        ClientAuth::Jwt(jwt) => {
            form.push(("client_id", client_id.to_string()));
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
            ));
            form.push(("client_assertion", jwt.clone()));
        }
    }
    let body = form
        .iter()
        .map(|(k, v)| format!("{k}={}", form_encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    let response = request
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| {
            let message = format!("the token endpoint could not be reached: {e}");
            fail(crate::url_secrets::without_url_secrets(
                &message,
                &metadata.token_endpoint,
            ))
        })?;
    let status = response.status();
    let bytes = read_bounded(response).await.map_err(|e| {
        fail(format!(
            "the token endpoint's answer could not be read: {e}"
        ))
    })?;
    let token = token_response(&bytes)
        .map_err(|why| fail(format!("the token endpoint answered {status} with {why}")))?;
    let granted = token
        .get("scope")
        .and_then(Value::as_str)
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or(scopes);
    let token: OAuthTokenResponse = serde_json::from_value(token).map_err(|e| {
        fail(format!(
            "the token endpoint's answer is not a token response: {e}"
        ))
    })?;
    Ok(StoredCredentials::new(
        client_id.to_string(),
        Some(token),
        granted,
        Some(now_secs()),
    )
    .with_issuer(metadata.issuer.clone()))
}

/// How the client authenticates at the token endpoint: a secret in the form when the server
/// takes only that, else HTTP Basic; a JWT signed with its private key when it has no secret.
fn client_auth<'a>(
    server: &str,
    client_id: &str,
    oauth: &'a UpstreamOAuth,
    metadata: &AuthorizationMetadata,
) -> Result<ClientAuth<'a>, OAuthError> {
    Ok(match (&oauth.client_secret, &oauth.private_key) {
        (Some(secret), _)
            if supports(metadata, "client_secret_post")
                && !supports(metadata, "client_secret_basic") =>
        {
            ClientAuth::Post(secret)
        }
        (Some(secret), _) => ClientAuth::Basic(secret),
        (None, Some(pem)) => ClientAuth::Jwt(assertion(
            server,
            client_id,
            pem,
            oauth.signing_algorithm,
            metadata,
        )?),
        (None, None) => {
            return Err(OAuthError::new(
                server,
                "the client-credentials grant needs `clientSecret` or `privateKey`",
            ));
        }
    })
}

/// The token response's JSON, or why it is not one: an OAuth error by its code only (its
/// description, or any other body, is the server's to choose and could echo the secret sent).
fn token_response(bytes: &[u8]) -> Result<Value, String> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|_| format!("{} bytes that are not JSON", bytes.len()))?;
    if let Some(code) = value.get("error").and_then(Value::as_str) {
        let code = safe_code(code);
        return Err(format!("the OAuth error `{code}`"));
    }
    if value.get("access_token").and_then(Value::as_str).is_none() {
        return Err("JSON without an `access_token`".into());
    }
    Ok(value)
}

fn supports(metadata: &AuthorizationMetadata, method: &str) -> bool {
    metadata
        .additional_fields
        .get("token_endpoint_auth_methods_supported")
        .and_then(Value::as_array)
        .is_some_and(|methods| methods.iter().any(|m| m == method))
}

/// A signed client assertion (RFC 7523 §2.2): the client is issuer and subject, the
/// authorization server's issuer the audience.
fn assertion(
    server: &str,
    client_id: &str,
    pem: &str,
    algorithm: Option<SigningAlgorithm>,
    metadata: &AuthorizationMetadata,
) -> Result<String, OAuthError> {
    let fail = |message: String| OAuthError::new(server, message);
    let (key, algorithm) = signing_key(pem, algorithm)
        .map_err(|why| fail(format!("`privateKey` is not usable: {why}")))?;
    let audience = metadata
        .issuer
        .clone()
        .unwrap_or_else(|| metadata.token_endpoint.clone());
    let now = now_secs();
    let mut id = [0u8; 16];
    getrandom::fill(&mut id).map_err(|e| fail(format!("no randomness for the assertion: {e}")))?;
    let claims = json!({
        "iss": client_id, "sub": client_id, "aud": audience,
        "iat": now, "exp": now + ASSERTION_LIFETIME,
        "jti": codemode_store::hex(&id),
    });
    let mut header = Header::new(algorithm);
    header.typ = Some("client-authentication+jwt".into());
    crate::crypto::install();
    jsonwebtoken::encode(&header, &claims, &key)
        .map_err(|e| fail(format!("signing the client assertion failed: {e}")))
}

/// The key and its algorithm: the one configured, else ES256 for an EC key, RS256 for RSA.
fn signing_key(
    pem: &str,
    configured: Option<SigningAlgorithm>,
) -> Result<(EncodingKey, Algorithm), String> {
    let bytes = pem.as_bytes();
    let algorithm = configured.map(|a| match a {
        SigningAlgorithm::Rs256 => Algorithm::RS256,
        SigningAlgorithm::Rs384 => Algorithm::RS384,
        SigningAlgorithm::Rs512 => Algorithm::RS512,
        SigningAlgorithm::Es256 => Algorithm::ES256,
        SigningAlgorithm::Es384 => Algorithm::ES384,
    });
    let ec = || EncodingKey::from_ec_pem(bytes);
    let rsa = || EncodingKey::from_rsa_pem(bytes);
    match algorithm {
        Some(a @ (Algorithm::ES256 | Algorithm::ES384)) => ec().map(|k| (k, a)),
        Some(a) => rsa().map(|k| (k, a)),
        None => ec()
            .map(|k| (k, Algorithm::ES256))
            .or_else(|_| rsa().map(|k| (k, Algorithm::RS256))),
    }
    .map_err(|e| format!("not a PEM EC or RSA private key for that algorithm ({e})"))
}

/// `application/x-www-form-urlencoded` encoding (also what RFC 6749 §2.3.1 asks of the
/// client ID and secret in a Basic header).
fn form_encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use codemode_config::{OAuthGrant, UpstreamOAuth};
    use rmcp::transport::auth::AuthorizationMetadata;

    use super::client_credentials;

    async fn grant(status: &'static str, body: Vec<u8>) -> String {
        let mut metadata = AuthorizationMetadata::default();
        metadata.token_endpoint = format!(
            "{}/token",
            super::super::http::answering(status, body).await
        );
        let oauth = UpstreamOAuth {
            client_id: Some("me".into()),
            client_secret: Some("s3cret-value".into()),
            grant: OAuthGrant::ClientCredentials,
            ..UpstreamOAuth::default()
        };
        let error = client_credentials("api", "http://127.0.0.1:1/mcp", &oauth, &metadata)
            .await
            .expect_err("a bad token endpoint");
        let text = error.to_string();
        assert!(!text.contains("s3cret-value"), "{text}");
        text
    }

    #[tokio::test]
    async fn a_bad_token_endpoint_is_a_clear_error_naming_the_upstream() {
        assert_eq!(
            grant("200 OK", b"<html>oops</html>".to_vec()).await,
            "upstream server `api`: the token endpoint answered 200 OK with 17 bytes that are not JSON"
        );
        assert_eq!(
            grant("200 OK", br#"{"token_type": "Bearer"}"#.to_vec()).await,
            "upstream server `api`: the token endpoint answered 200 OK with JSON without an `access_token`"
        );
        // Only the error's code: its description is the server's to choose (it could echo the
        // secret).
        assert_eq!(
            grant(
                "401 Unauthorized",
                br#"{"error": "invalid_client", "error_description": "you sent s3cret-value"}"#
                    .to_vec()
            )
            .await,
            "upstream server `api`: the token endpoint answered 401 Unauthorized with the OAuth error `invalid_client`"
        );
        assert_eq!(
            grant("200 OK", vec![b' '; 1 << 20]).await,
            "upstream server `api`: the token endpoint's answer could not be read: it is over 65536 bytes"
        );
    }
}
