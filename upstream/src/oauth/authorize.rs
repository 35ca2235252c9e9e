//! The authorization-code flow: registration, the authorization URL to a person, the loopback
//! redirect checked and exchanged with the PKCE verifier.

use codemode_config::UpstreamOAuth;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession,
};

use super::browser::{self, Browser};
use super::record::Registered;
use super::{Logins, OAuthError, describe};

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
        let (request, registered) =
            identify(server, oauth, (&mut manager, &metadata), &redirect.uri).await?;
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, e)| fail(e))?;
        browser.open(server, session.get_authorization_url())?;
        let back = redirect.wait(server).await?;
        check_state(server, session.get_authorization_url(), &back)?;
        session.handle_callback_url(&back).await.map_err(|e| {
            OAuthError::new(
                server,
                format!("the login did not complete: {}", describe(&e)),
            )
        })?;
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

/// Refuses a redirect whose `state` is not the one this login sent (a forged or stale one), and
/// one that says the login was refused.
fn check_state(server: &str, sent: &str, back: &str) -> Result<(), OAuthError> {
    let param = |url: &str, name: &str| {
        url::Url::parse(url).ok().and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        })
    };
    if let Some(error) = param(back, "error") {
        let said = param(back, "error_description")
            .map(|d| format!(": {}", codemode_policies::neutralize(&d)))
            .unwrap_or_default();
        return Err(OAuthError::new(
            server,
            format!(
                "the authorization server refused the login (`{}`{said})",
                codemode_policies::neutralize(&error)
            ),
        ));
    }
    if param(back, "state").is_none() || param(back, "state") != param(sent, "state") {
        return Err(OAuthError::new(
            server,
            "the browser came back with a `state` this login did not send (a forged or stale \
             redirect); nothing was saved: log in again",
        ));
    }
    Ok(())
}
