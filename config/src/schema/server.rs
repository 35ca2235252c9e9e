//! The `server` section: hosts, origins and the listener's limits, who may call (static
//! tokens, JWTs or OAuth access tokens), health and metrics. The values with checks of their
//! own (origins, OAuth URLs and scopes, non-empty strings) are typed here, so that their errors
//! come in the document's order.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use super::values::{
    Duration, NonEmpty, NonEmptyStrings, Positive, Retry, Size, Strings, array_of,
    https_url_problem, schema_as,
};

/// How `codemode serve --http` accepts requests.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Server {
    /// Hosts, origins and the listener's limits.
    pub(crate) http: Option<Http>,
    /// Who may call: static tokens or JWTs, one of them. Default: none.
    pub(crate) auth: Option<Auth>,
    /// Health and metrics: `/healthz`, `/readyz`, `/metrics`.
    pub(crate) admin: Option<Admin>,
}

/// Health and metrics, served on the `serve --http` listener and, with `listen`, on a listener
/// of their own.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Admin {
    /// The admin listener's `IP:PORT` (health and metrics only). Default: none.
    pub(crate) listen: Option<String>,
    /// Whether metrics are kept and `/metrics` served. Default: `true`.
    pub(crate) metrics: Option<bool>,
    /// The bearer token `/metrics` demands: `sha256` (its hash) or `env` (a variable holding
    /// it). Default: none, `/metrics` is open.
    pub(crate) metrics_auth: Option<MetricsAuth>,
}

/// The token `/metrics` demands: `sha256` or `env`, one of them.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MetricsAuth {
    /// The token's SHA-256, 64 hex digits.
    pub(crate) sha256: Option<String>,
    /// The environment variable holding the token.
    pub(crate) env: Option<String>,
}

/// The HTTP listener's checks and limits.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Http {
    /// `Host` headers accepted besides the loopback ones.
    pub(crate) allowed_hosts: Option<NonEmptyStrings>,
    /// Browser `Origin`s accepted (`https://app.example.com`, `https://*.example.com`).
    pub(crate) allowed_origins: Option<AllowedOrigins>,
    /// Most MCP sessions at once.
    #[schemars(range(min = 1))]
    pub(crate) max_sessions: Option<Positive>,
    /// Most MCP sessions of one client at once.
    #[schemars(range(min = 1))]
    pub(crate) max_sessions_per_client: Option<Positive>,
    /// How long a request's headers may take to arrive.
    pub(crate) header_read_timeout: Option<Duration>,
    /// How long a request's body may take to arrive.
    pub(crate) body_read_timeout: Option<Duration>,
    /// The largest request body.
    pub(crate) max_request_body: Option<Size>,
    /// Open connections of one listener in all (default: sized from the descriptor limit).
    #[schemars(range(min = 1))]
    pub(crate) max_connections: Option<Positive>,
    /// Open connections of one listener from one IPv4 address or IPv6 /64 (default 64).
    #[serde(rename = "maxConnectionsPerIp")]
    #[schemars(range(min = 1))]
    pub(crate) max_connections_per_ip: Option<Positive>,
    /// How long an approval event stream stays open before the client reconnects (default 1h).
    pub(crate) max_stream_lifetime: Option<Duration>,
    /// Approval event streams one caller holds open at once (default 16).
    #[schemars(range(min = 1))]
    pub(crate) max_streams_per_caller: Option<Positive>,
}

/// `allowedOrigins`: each `null` or `scheme://host[:port|:*]` with no path.
#[derive(Debug, Clone)]
pub(crate) struct AllowedOrigins(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for AllowedOrigins {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let origins: Vec<AllowedOrigin> = array_of(d, "an array of strings")?;
        Ok(AllowedOrigins(origins.into_iter().map(|o| o.0).collect()))
    }
}

struct AllowedOrigin(String);

impl<'de> Deserialize<'de> for AllowedOrigin {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let NonEmpty(origin) = NonEmpty::deserialize(d)?;
        if !crate::origin::valid_allowed_origin(&origin) {
            return Err(de::Error::custom(format!(
                "an origin is `null` or `scheme://host[:port|:*]` with no path (e.g. `https://app.example.com`), got `{origin}`"
            )));
        }
        Ok(AllowedOrigin(origin))
    }
}

/// Who may call: `tokens`, `jwt` or `oauth`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Auth {
    /// Static bearer tokens.
    pub(crate) tokens: Option<Tokens>,
    /// JWT bearer tokens.
    pub(crate) jwt: Option<Jwt>,
    /// An OAuth 2.1 protected resource: access tokens from external authorization servers.
    pub(crate) oauth: Option<OAuthResource>,
}

/// codemode as an OAuth 2.1 protected resource (MCP authorization, RFC 9728).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct OAuthResource {
    /// The issuer URLs whose JWT access tokens are accepted; keys found by RFC 8414 / OpenID
    /// discovery.
    #[schemars(required)]
    pub(crate) authorization_servers: Option<IssuerUrls>,
    /// This server's canonical URL (e.g. `https://codemode.example/mcp`): the required `aud`.
    #[schemars(required)]
    pub(crate) resource: Option<ResourceUrl>,
    /// The permissions each scope grants; a scope not listed grants none.
    pub(crate) scope_permissions: Option<ScopePermissions>,
}

/// `authorizationServers`: at least one issuer URL, each `https` (`http` on a loopback host).
#[derive(Debug, Clone)]
pub(crate) struct IssuerUrls(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for IssuerUrls {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let urls: Vec<Url<IssuerWords>> = array_of(d, "an array of strings")?;
        if urls.is_empty() {
            return Err(de::Error::custom("name at least one issuer URL"));
        }
        Ok(IssuerUrls(urls.into_iter().map(|u| u.0).collect()))
    }
}

/// `resource`: this server's canonical URL, `https` (`http` on a loopback host).
#[derive(Debug, Clone)]
pub(crate) struct ResourceUrl(pub(crate) String);

impl<'de> Deserialize<'de> for ResourceUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Url::<ResourceWords>::deserialize(d).map(|u| ResourceUrl(u.0))
    }
}

/// How a [`Url`]'s messages name it.
trait UrlWords {
    const WHAT: &'static str;
}

#[derive(Debug)]
struct IssuerWords;

impl UrlWords for IssuerWords {
    const WHAT: &'static str = "an issuer URL";
}

#[derive(Debug)]
struct ResourceWords;

impl UrlWords for ResourceWords {
    const WHAT: &'static str = "this server's canonical URL";
}

/// An `https` URL (see [`https_url_problem`]), named `W::WHAT` in its error.
struct Url<W>(String, PhantomData<W>);

impl<'de, W: UrlWords> Deserialize<'de> for Url<W> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let url = String::deserialize(d)?;
        match https_url_problem(&url, W::WHAT) {
            Some(problem) => Err(de::Error::custom(problem)),
            None => Ok(Url(url, PhantomData)),
        }
    }
}

/// `scopePermissions`: scope → the permissions it grants.
#[derive(Debug, Clone)]
pub(crate) struct ScopePermissions(pub(crate) BTreeMap<String, Vec<String>>);

impl<'de> Deserialize<'de> for ScopePermissions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ScopesVisitor)
    }
}

struct ScopesVisitor;

impl ScopesVisitor {
    fn refuse<E: de::Error>(self) -> Result<ScopePermissions, E> {
        Err(E::custom("expected an object of scope → [permission, …]"))
    }
}

impl<'de> Visitor<'de> for ScopesVisitor {
    type Value = ScopePermissions;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of scope → [permission, …]")
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        while let Some(Scope(scope)) = map.next_key()? {
            // A wrong list of permissions leaves its scope out, not the others.
            if let Retry(Some(Strings(permissions))) = map.next_value()? {
                out.insert(scope, permissions);
            }
        }
        Ok(ScopePermissions(out))
    }

    // Anything but an object is refused in the same words, whatever its type.
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        self.refuse()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        self.refuse()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        self.refuse()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        self.refuse()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        self.refuse()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.refuse()
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        self.refuse()
    }
}

/// An OAuth scope: printable ASCII without space, `"` or `\\` (RFC 6749 §3.3).
struct Scope(String);

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let scope = String::deserialize(d)?;
        let bad = |c: char| c == '"' || c == '\\' || !c.is_ascii_graphic();
        if scope.is_empty() || scope.chars().any(bad) {
            let message = "a scope is printable ASCII without spaces, `\"` or `\\`";
            return Err(de::Error::custom(message));
        }
        Ok(Scope(scope))
    }
}

/// `tokens`: static bearer tokens, refused as "an array of tokens" when no array.
#[derive(Debug, Clone)]
pub(crate) struct Tokens(pub(crate) Vec<Token>);

impl<'de> Deserialize<'de> for Tokens {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        array_of(d, "an array of tokens").map(Tokens)
    }
}

/// One static bearer token: `sha256` (its hash) or `env` (a variable holding it), not both.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Token {
    /// The caller's name, in the audit log.
    #[schemars(required)]
    pub(crate) name: Option<String>,
    /// The token's SHA-256, 64 hex digits; the file never holds the token.
    pub(crate) sha256: Option<String>,
    /// The environment variable holding the token.
    pub(crate) env: Option<String>,
    /// The caller's permissions.
    pub(crate) permissions: Option<NonEmptyStrings>,
}

/// JWT bearer tokens: `hs256SecretEnv` or `jwksFile`, one of them.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Jwt {
    /// The required `iss`.
    #[schemars(required)]
    pub(crate) issuer: Option<String>,
    /// The required `aud`.
    #[schemars(required)]
    pub(crate) audience: Option<String>,
    /// The environment variable holding the HS256 secret.
    pub(crate) hs256_secret_env: Option<String>,
    /// A JWKS file of public keys.
    pub(crate) jwks_file: Option<String>,
    /// The claim listing the caller's permissions. Default: `"permissions"`.
    pub(crate) permissions_claim: Option<String>,
}

schema_as!(Vec<String> => IssuerUrls, AllowedOrigins);
schema_as!(String => ResourceUrl);
schema_as!(BTreeMap<String, Vec<String>> => ScopePermissions);
schema_as!(Vec<Token> => Tokens);
