//! The authorization-code flow: registration, the authorization URL to a person, the loopback
//! redirect checked and exchanged with the PKCE verifier.

use codemode_config::UpstreamOAuth;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession,
};

use super::Logins;
use super::browser::{self, Browser};
use super::error::{OAuthError, describe};
use super::http::bounded;
use super::record::Registered;

impl Logins {
    /// The authorization-code flow with PKCE and a loopback redirect.
    pub(super) async fn authorize(
        &self,
        server: &str,
        (url, oauth): (&str, &UpstreamOAuth),
        (mut manager, metadata): (AuthorizationManager, AuthorizationMetadata),
        browser: &Browser,
    ) -> Result<(), OAuthError> {
        let fail = |e: AuthError| OAuthError::auth(server, &e);
        let redirect = browser::Redirect::listen(server, oauth.redirect_uri.as_deref()).await?;
        let identified = identify(server, oauth, (&mut manager, &metadata), &redirect.uri);
        let (request, registered) = bounded(server, "client registration", identified).await?;
        let prepared = async {
            AuthorizationSession::new(manager, request)
                .await
                .map_err(|(_, e)| fail(e))
        };
        let session = bounded(server, "preparing the login", prepared).await?;
        let sent = session.get_authorization_url();
        check_url(server, sent)?;
        browser.open(server, sent)?;
        let back = redirect
            .wait(server, &query_param(sent, "state").unwrap_or_default())
            .await?;
        let exchanged = async {
            session.handle_callback_url(&back).await.map_err(|e| {
                OAuthError::new(
                    server,
                    format!("the login did not complete: {}", describe(&e)),
                )
            })
        };
        bounded(server, "the code exchange", exchanged).await?;
        if let Some(registered) = registered {
            let record = self.record(server, url);
            let mut saved = record.read_or_new().await.map_err(fail)?;
            saved.registered = Some(registered);
            record.write(&saved).await.map_err(fail)?;
        }
        Ok(())
    }
}

/// The authorization request with the client's identity: the configured client, else a client
/// ID metadata document where the server supports them, else a client registered now (kept to
/// be saved with the login: rmcp would keep only its ID, and a confidential client needs its
/// secret again to refresh).
async fn identify(
    server: &str,
    oauth: &UpstreamOAuth,
    (manager, metadata): (&mut AuthorizationManager, &AuthorizationMetadata),
    redirect_uri: &str,
) -> Result<(AuthorizationRequest, Option<Registered>), OAuthError> {
    let request = AuthorizationRequest::new(redirect_uri)
        .with_client_name("codemode")
        .with_scopes(oauth.scopes.clone());
    let cimd = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(serde_json::Value::as_bool)
        == Some(true);
    if let Some(id) = &oauth.client_id {
        let request = request.with_preregistered_client(id);
        return Ok((
            match &oauth.client_secret {
                Some(secret) => request.with_client_secret(secret),
                None => request,
            },
            None,
        ));
    }
    if let Some(document) = oauth.client_metadata_url.as_deref().filter(|_| cimd) {
        return Ok((request.with_client_metadata_url(document), None));
    }
    let scopes: Vec<&str> = oauth.scopes.iter().map(String::as_str).collect();
    let client = manager
        .register_client("codemode", redirect_uri, &scopes)
        .await
        .map_err(|e| {
            OAuthError::new(
                server,
                format!("client registration failed: {}", describe(&e)),
            )
        })?;
    let request = request.with_preregistered_client(&client.client_id);
    let request = match &client.client_secret {
        Some(secret) => request.with_client_secret(secret),
        None => request,
    };
    let registered = Registered {
        client_id: client.client_id,
        client_secret: client.client_secret,
        redirect_uri: redirect_uri.to_string(),
    };
    Ok((request, Some(registered)))
}

/// A query parameter of `url`.
pub(super) fn query_param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url).ok().and_then(|u| {
        u.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    })
}

/// Refuses an authorization URL a browser should not be sent to: only `https://`, or
/// `http://` to this machine, is opened (the authorization server chooses the URL, and a
/// `file:` or an application's own scheme would start something else on this machine).
fn check_url(server: &str, url: &str) -> Result<(), OAuthError> {
    let parsed = url::Url::parse(url).ok();
    let fine = parsed.as_ref().is_some_and(|u| match u.scheme() {
        "https" => true,
        "http" => matches!(u.host_str(), Some("127.0.0.1" | "localhost" | "[::1]")),
        _ => false,
    });
    if fine {
        return Ok(());
    }
    let scheme = parsed.map_or_else(|| "unparsable".to_string(), |u| u.scheme().to_string());
    Err(OAuthError::new(
        server,
        format!(
            "its authorization server gave an authorization URL with the scheme `{}`; codemode \
             opens only https:// URLs (or http:// to this machine)",
            codemode_policies::neutralize(&scheme)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::check_url;

    #[test]
    fn only_https_or_this_machine_is_opened() {
        for fine in [
            "https://as.example/authorize?x=1",
            "http://127.0.0.1:9/authorize",
            "http://localhost:9/authorize",
        ] {
            assert_eq!(check_url("s", fine), Ok(()), "{fine}");
        }
        for (bad, scheme) in [
            ("file:///etc/passwd?response_type=code", "file"),
            ("javascript:alert(1)//?x", "javascript"),
            ("vscode://evil/cmd?x", "vscode"),
            ("http://as.example/authorize", "http"),
        ] {
            assert_eq!(
                check_url("s", bad).unwrap_err().to_string(),
                format!(
                    "upstream server `s`: its authorization server gave an authorization URL with \
                     the scheme `{scheme}`; codemode opens only https:// URLs (or http:// to this \
                     machine)"
                ),
                "{bad}"
            );
        }
    }
}
