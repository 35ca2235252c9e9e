//! `oauth` of an HTTP server entry: how codemode logs in to an upstream that uses the MCP
//! authorization spec (OAuth 2.1). `"oauth": {}` turns discovery and registration on with
//! every default; a server that answers `401` with a `resource_metadata` challenge gets the
//! same without the key.

use crate::error::ConfigErrorKind;
use crate::reader::{JsonPath, Reader};
use crate::schema::servers::OAuth;
use crate::schema::values::Indexed;

/// How codemode gets an access token for one HTTP upstream (`oauth`). Every string accepts
/// `${env:VAR}`; the secrets (`clientSecret`, `privateKey`) never appear in messages, logs or
/// the audit, and `Debug` shows them as `<redacted>`.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct UpstreamOAuth {
    /// A client registered with the authorization server beforehand (`clientId`). Default:
    /// a client ID metadata document (`clientMetadataUrl`) when the server supports those,
    /// else dynamic registration (RFC 7591).
    pub client_id: Option<String>,
    /// That client's secret (`clientSecret`), sent the way the server's metadata asks
    /// (`client_secret_basic` or `client_secret_post`).
    pub client_secret: Option<String>,
    /// A PEM private key (`privateKey`) for `private_key_jwt` client authentication of the
    /// client-credentials grant (RFC 7523).
    pub private_key: Option<String>,
    /// The key's algorithm (`signingAlgorithm`). Default: `ES256` for an EC key, `RS256` for
    /// an RSA key.
    pub signing_algorithm: Option<SigningAlgorithm>,
    /// The grant (`grantType`). Default: the authorization-code flow, a person logging in.
    pub grant: OAuthGrant,
    /// The scopes to ask for (`scopes`). Default: those of the server's challenge, else its
    /// `scopes_supported`, else none.
    pub scopes: Vec<String>,
    /// An HTTPS URL of this client's metadata document (`clientMetadataUrl`), used as the
    /// client ID where the authorization server supports it.
    pub client_metadata_url: Option<String>,
    /// Where the authorization server sends the browser back (`redirectUri`): a loopback
    /// `http://` URL codemode listens on during a login. Default:
    /// `http://127.0.0.1:<a free port>/callback`.
    pub redirect_uri: Option<String>,
}

impl std::fmt::Debug for UpstreamOAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |present: bool| present.then_some("<redacted>");
        f.debug_struct("UpstreamOAuth")
            .field("client_id", &self.client_id)
            .field("client_secret", &redacted(self.client_secret.is_some()))
            .field("private_key", &redacted(self.private_key.is_some()))
            .field("signing_algorithm", &self.signing_algorithm)
            .field("grant", &self.grant)
            .field("scopes", &self.scopes)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("redirect_uri", &self.redirect_uri)
            .finish()
    }
}

/// The OAuth grant codemode uses for an upstream (`grantType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OAuthGrant {
    /// `authorization_code`: someone logs in once (`codemode auth login <server>`), with PKCE;
    /// refresh tokens keep the login alive.
    #[default]
    AuthorizationCode,
    /// `client_credentials`: codemode gets tokens itself, with `clientSecret` or `privateKey`
    /// (headless use, no person involved).
    ClientCredentials,
}

/// The signature algorithm of a `privateKey` (`signingAlgorithm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigningAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    Rs384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    Rs512,
    /// ECDSA on P-256 with SHA-256.
    Es256,
    /// ECDSA on P-384 with SHA-384.
    Es384,
}

impl SigningAlgorithm {
    /// Every algorithm, with its JOSE name.
    pub const ALL: [(SigningAlgorithm, &'static str); 5] = [
        (SigningAlgorithm::Rs256, "RS256"),
        (SigningAlgorithm::Rs384, "RS384"),
        (SigningAlgorithm::Rs512, "RS512"),
        (SigningAlgorithm::Es256, "ES256"),
        (SigningAlgorithm::Es384, "ES384"),
    ];

    /// Its JOSE name (`ES256`).
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(alg, _)| *alg == self)
            .map_or("", |(_, name)| name)
    }
}

/// `oauth` as read (at `path`), its references replaced and its names and keys checked; `None`
/// when anything in it was wrong (recorded).
pub(crate) fn read_oauth(r: &mut Reader, read: &OAuth, path: &JsonPath) -> Option<UpstreamOAuth> {
    let text = |r: &mut Reader, written: &Option<String>, key: &str| -> Option<String> {
        r.substituted(written.as_deref()?, &path.key(key))
    };
    let oauth = UpstreamOAuth {
        client_id: text(r, &read.client_id, "clientId"),
        client_secret: text(r, &read.client_secret, "clientSecret"),
        private_key: text(r, &read.private_key, "privateKey"),
        signing_algorithm: text(r, &read.signing_algorithm, "signingAlgorithm")
            .and_then(|name| algorithm(r, &name, &path.key("signingAlgorithm"))),
        grant: match text(r, &read.grant_type, "grantType").as_deref() {
            None | Some("authorization_code") => OAuthGrant::AuthorizationCode,
            Some("client_credentials") => OAuthGrant::ClientCredentials,
            Some(other) => {
                r.error(
                    &path.key("grantType"),
                    ConfigErrorKind::InvalidValue,
                    format!(
                        "unknown grant `{other}`; allowed: `authorization_code`, `client_credentials`"
                    ),
                );
                OAuthGrant::AuthorizationCode
            }
        },
        scopes: scopes(r, read.scopes.as_ref(), &path.key("scopes")),
        client_metadata_url: text(r, &read.client_metadata_url, "clientMetadataUrl"),
        redirect_uri: text(r, &read.redirect_uri, "redirectUri"),
    };
    check(r, &oauth, path);
    // Its errors, the read's included, are at or inside its path.
    (!r.reported(path)).then_some(oauth)
}

fn algorithm(r: &mut Reader, name: &str, path: &JsonPath) -> Option<SigningAlgorithm> {
    let found = SigningAlgorithm::ALL
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(alg, _)| *alg);
    if found.is_none() {
        let names: Vec<&str> = SigningAlgorithm::ALL.iter().map(|(_, n)| *n).collect();
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            format!("unknown algorithm `{name}`; allowed: {}", names.join(", ")),
        );
    }
    found
}

/// The scopes (at `path`), each one word once its references are replaced.
fn scopes(r: &mut Reader, read: Option<&Indexed<String>>, path: &JsonPath) -> Vec<String> {
    let mut out = Vec::new();
    let items = read.map(|l| l.0.as_slice()).unwrap_or_default();
    for (i, text) in items.iter().enumerate() {
        let Some(text) = text else { continue };
        let p = path.index(i);
        match r.substituted(text, &p) {
            Some(scope) if scope.is_empty() || scope.contains(char::is_whitespace) => r.error(
                &p,
                ConfigErrorKind::InvalidValue,
                "a scope is one non-empty word without spaces",
            ),
            Some(scope) => out.push(scope),
            None => {}
        }
    }
    out
}

/// The checks across keys; values are not quoted (they may hold secrets).
fn check(r: &mut Reader, oauth: &UpstreamOAuth, path: &JsonPath) {
    let mut bad = |key: &str, kind: ConfigErrorKind, message: &str| {
        r.error(&path.key(key), kind, message.to_string());
    };
    if oauth.client_secret.is_some() && oauth.client_id.is_none() {
        bad(
            "clientSecret",
            ConfigErrorKind::ConflictingKeys,
            "a client secret belongs to a pre-registered client: give `clientId` too",
        );
    }
    if oauth.private_key.is_some() && oauth.grant != OAuthGrant::ClientCredentials {
        bad(
            "privateKey",
            ConfigErrorKind::ConflictingKeys,
            "a private key authenticates the client-credentials grant: add \
             `\"grantType\": \"client_credentials\"`",
        );
    }
    if oauth.signing_algorithm.is_some() && oauth.private_key.is_none() {
        bad(
            "signingAlgorithm",
            ConfigErrorKind::ConflictingKeys,
            "`signingAlgorithm` applies to `privateKey`, which is not given",
        );
    }
    if oauth.grant == OAuthGrant::ClientCredentials {
        if oauth.client_id.is_none() {
            bad(
                "clientId",
                ConfigErrorKind::MissingField,
                "the client-credentials grant needs `clientId` (with `clientSecret` or `privateKey`)",
            );
        } else if oauth.client_secret.is_none() == oauth.private_key.is_none() {
            bad(
                "grantType",
                ConfigErrorKind::ConflictingKeys,
                "the client-credentials grant needs exactly one of `clientSecret` and `privateKey`",
            );
        }
    }
    if let Some(url) = &oauth.client_metadata_url
        && !https_with_path(url)
    {
        bad(
            "clientMetadataUrl",
            ConfigErrorKind::InvalidValue,
            "a client metadata URL is an https:// URL with a path (the document's address)",
        );
    }
    if let Some(uri) = &oauth.redirect_uri
        && loopback_port(uri).is_none()
    {
        bad(
            "redirectUri",
            ConfigErrorKind::InvalidValue,
            "codemode receives the login on a loopback address: give \
             `http://127.0.0.1:<port>/<path>` or `http://localhost:<port>/<path>`",
        );
    }
}

fn https_with_path(url: &str) -> bool {
    url.strip_prefix("https://")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(host, path)| !host.is_empty() && !path.is_empty())
}

/// The port of a loopback `http://` redirect URI with an explicit port, else `None`.
pub fn loopback_port(uri: &str) -> Option<u16> {
    let rest = uri.strip_prefix("http://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (host, port) = authority.rsplit_once(':')?;
    if !matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
        return None;
    }
    port.parse().ok().filter(|p| *p != 0)
}
