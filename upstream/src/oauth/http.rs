//! codemode's own OAuth HTTP requests (discovery, the challenge probe, token requests): no
//! redirects, bounded in time and size.

use super::error::OAuthError;

/// How long one OAuth HTTP request (discovery, the challenge probe, a token request) may take.
pub(crate) const OAUTH_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// How long one step of a login driven by rmcp (discovery, registration, the code exchange)
/// may take: rmcp's own HTTP client has no time limit.
pub(crate) const OAUTH_STEP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// The largest answer read from an authorization server.
pub(crate) const MAX_OAUTH_RESPONSE: usize = 64 * 1024;

/// The HTTP client of codemode's own OAuth requests: no redirects, 30 s a request.
pub fn oauth_http(server: &str) -> Result<reqwest::Client, OAuthError> {
    crate::crypto::install();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(OAUTH_REQUEST_TIMEOUT)
        .timeout(OAUTH_REQUEST_TIMEOUT)
        .build()
        .map_err(|e| OAuthError::new(server, format!("cannot build an HTTP client: {e}")))
}

/// Why an authorization server's answer was not read ([`read_bounded`]).
#[derive(Debug, thiserror::Error)]
pub enum UnreadResponse {
    /// The connection failed while the body was read.
    #[error(transparent)]
    Read(reqwest::Error),
    /// The body is longer than 64 KiB.
    #[error("it is over {MAX_OAUTH_RESPONSE} bytes")]
    TooLong,
}

/// A response's body, at most 64 KiB.
///
/// # Errors
/// [`UnreadResponse`] when the body cannot be read or is too long.
pub async fn read_bounded(mut response: reqwest::Response) -> Result<Vec<u8>, UnreadResponse> {
    let mut out = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(UnreadResponse::Read)? {
        if out.len() + chunk.len() > MAX_OAUTH_RESPONSE {
            return Err(UnreadResponse::TooLong);
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// `step`, failing with a message naming `what` after [`OAUTH_STEP_TIMEOUT`].
pub(crate) async fn bounded<T>(
    server: &str,
    what: &str,
    step: impl std::future::Future<Output = Result<T, OAuthError>>,
) -> Result<T, OAuthError> {
    tokio::time::timeout(OAUTH_STEP_TIMEOUT, step)
        .await
        .unwrap_or_else(|_| {
            Err(OAuthError::new(
                server,
                format!("{what} took over {} s", OAUTH_STEP_TIMEOUT.as_secs()),
            ))
        })
}

/// An HTTP server on loopback answering every request with `status` and `body`; its base URL.
#[cfg(test)]
pub(crate) async fn answering(status: &'static str, body: Vec<u8>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut head = [0u8; 4096];
            let _ = stream.read(&mut head).await;
            let reply = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
            let _ = stream.write_all(&body).await;
        }
    });
    format!("http://127.0.0.1:{port}")
}
