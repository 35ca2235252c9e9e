//! The process's crypto providers, one of each kind for the whole build: *ring* for rustls (the
//! TLS of every HTTPS client: streamable-HTTP upstreams, `codemode approve`) and RustCrypto for
//! jsonwebtoken (`server.auth.jwt`).
//!
//! reqwest is built without a provider of its own (so aws-lc, a C library built with cmake, is
//! not compiled at all) and panics when a client is built before one is installed; jsonwebtoken
//! with two providers enabled picks none and panics on the first signature. [`install`] is
//! therefore called by every path that builds an HTTP client or checks a JWT, so an embedder of
//! this crate gets the providers without doing anything.

use std::sync::Once;

/// Installs ring as rustls's process-wide crypto provider and RustCrypto as jsonwebtoken's.
/// Idempotent and cheap after the first call. A provider installed earlier (by an embedder) is
/// kept: theirs is used.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // `Err` only when a provider is already installed, which is what we want.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
    });
}

/// A `reqwest::Client` with reqwest's defaults, the providers installed first.
pub fn http_client() -> reqwest::Client {
    install();
    reqwest::Client::new()
}

#[cfg(test)]
mod tests {
    use codemode_test_support::tls;
    use jsonwebtoken::errors::ErrorKind;
    use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
    use serde_json::{Value, json};

    /// The lock file resolves every feature of every workspace member on every target: no
    /// second TLS provider (aws-lc, or OpenSSL through native-tls) and no second jsonwebtoken
    /// provider (its `aws_lc_rs` feature needs aws-lc-rs) can come back without failing here.
    #[test]
    fn the_build_has_one_crypto_provider() {
        let lock = include_str!("../../Cargo.lock");
        let packages: Vec<&str> = lock
            .lines()
            .filter_map(|l| l.strip_prefix("name = \""))
            .map(|l| l.trim_end_matches('"'))
            .collect();
        assert!(packages.contains(&"ring"));
        for other in ["aws-lc-rs", "aws-lc-sys", "openssl-sys", "native-tls"] {
            assert!(!packages.contains(&other), "{other} is in Cargo.lock");
        }
    }

    #[tokio::test]
    async fn https_clients_have_a_provider_and_verify_certificates() {
        let port = tls::serve();
        let url = format!("https://127.0.0.1:{port}/");
        // Our client trusts the system's roots, which do not hold the test CA: refused in the
        // handshake, with why.
        let err = super::http_client().get(&url).send().await.unwrap_err();
        // The error and its causes on one line, as the CLI prints them.
        let mut chain = err.to_string();
        let mut source = std::error::Error::source(&err);
        while let Some(cause) = source {
            chain.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        assert_eq!(
            chain,
            format!(
                "error sending request for url ({url}): client error (Connect): \
                 invalid peer certificate: UnknownIssuer"
            )
        );
        // Trusting the test CA, the same provider completes the handshake.
        let ca = reqwest::Certificate::from_pem(tls::CA_PEM.as_bytes()).unwrap();
        let trusted = reqwest::Client::builder()
            .add_root_certificate(ca)
            .build()
            .unwrap();
        let response = trusted.get(&url).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.text().await.unwrap(), "ok");
    }

    /// jsonwebtoken with two providers enabled panics here (it picks neither).
    #[test]
    fn jwts_are_signed_and_verified() {
        super::install();
        let claims = json!({"sub": "alice", "exp": jsonwebtoken::get_current_timestamp() + 600});
        let token = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(b"the issuer's secret"),
        )
        .unwrap();
        let validation = Validation::new(Algorithm::HS256);
        let decoded = jsonwebtoken::decode::<Value>(
            &token,
            &DecodingKey::from_secret(b"the issuer's secret"),
            &validation,
        )
        .unwrap();
        assert_eq!(decoded.claims, claims);
        let forged = jsonwebtoken::decode::<Value>(
            &token,
            &DecodingKey::from_secret(b"another secret"),
            &validation,
        )
        .unwrap_err();
        assert!(
            matches!(forged.kind(), ErrorKind::InvalidSignature),
            "{forged:?}"
        );
    }
}
