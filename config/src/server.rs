//! The `server` section: how `codemode serve --http` accepts requests — which `Host` and
//! `Origin` headers it answers, and who may call it (`auth`: static bearer tokens or JWTs).
//!
//! Only the shape is checked here (JSON paths in every error); reading the environment
//! variables and the JWKS file happens when the server starts (`codemode-host`'s `auth`).

use std::path::PathBuf;

use serde_json::Value;

use crate::error::ConfigErrorKind;
use crate::reader::{JsonPath, Reader};
use crate::schema::sections;

/// The `server` section. Default: loopback `Host`s only, no `Origin` check, no auth.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerSettings {
    /// `server.http`.
    pub http: HttpSettings,
    /// `server.auth`. Default: none (every request is the `local` caller; then HTTP may only be
    /// served on a loopback address unless `--allow-unauthenticated`).
    pub auth: Option<AuthSettings>,
    /// `server.admin`: health and metrics.
    pub admin: AdminSettings,
}

/// `server.admin`: health (`/healthz`, `/readyz`) and metrics (`/metrics`), served on the
/// `serve --http` listener and, with `listen`, on a listener of their own. Default: no listener
/// of their own, metrics kept and served without a token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AdminSettings {
    /// `listen`: the admin listener's address. Default: none.
    pub listen: Option<std::net::SocketAddr>,
    /// `metrics`: whether metrics are kept and `/metrics` served. Default: `true`.
    pub metrics: bool,
    /// `metricsAuth`: the bearer token `/metrics` demands. Default: none.
    pub metrics_auth: Option<TokenSecret>,
}

impl Default for AdminSettings {
    fn default() -> Self {
        AdminSettings {
            listen: None,
            metrics: true,
            metrics_auth: None,
        }
    }
}

/// `server.http`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpSettings {
    /// `allowedHosts`: `Host` values accepted besides the loopback names (`localhost`,
    /// `127.0.0.1`, `::1`), as `name` (any port) or `name:port`. Default: none.
    pub allowed_hosts: Vec<String>,
    /// `allowedOrigins`: when non-empty, a request carrying an `Origin` header must match one
    /// (`scheme://host:port`, `:*` for any port). Default: none (no Origin check).
    pub allowed_origins: Vec<String>,
    /// Session caps, read timeouts and the body size limit of the listener. Default:
    /// [`ListenerLimits::default`](super::ListenerLimits::default).
    pub limits: super::ListenerLimits,
}

/// `server.auth`: exactly one of `tokens`, `jwt` or `oauth`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthSettings {
    /// `tokens`: static bearer tokens.
    Tokens(Vec<TokenSettings>),
    /// `jwt`: signed JSON Web Tokens.
    Jwt(JwtSettings),
    /// `oauth`: an OAuth 2.1 protected resource whose access tokens come from external
    /// authorization servers.
    OAuth(crate::server_oauth::OAuthResourceSettings),
}

/// The name of the unauthenticated caller (stdio, `codemode run`, loopback HTTP without
/// `auth`): no token or JWT may speak for it, since what is bound to a caller's name (its
/// remembered approvals, its asks, its fairness share) would then be shared with the machine's
/// own user.
pub const LOCAL_CALLER: &str = "local";

/// One static bearer token (`server.auth.tokens[i]`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenSettings {
    /// `name`: the caller this token speaks for (required, non-empty).
    pub name: String,
    /// Where the token is: its hash in the file, or an environment variable.
    pub secret: TokenSecret,
    /// `permissions` granted to the caller. Default: none.
    pub permissions: Vec<String>,
}

/// How a static token is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSecret {
    /// `sha256`: the SHA-256 of the token (64 hex digits); the file never holds the token.
    Sha256([u8; 32]),
    /// `env`: the name of an environment variable holding the token, read at start.
    Env(String),
}

/// `server.auth.jwt`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JwtSettings {
    /// `issuer`: the required `iss` claim (required).
    pub issuer: String,
    /// `audience`: the required `aud` claim (required).
    pub audience: String,
    /// The verification key: `hs256SecretEnv` or `jwksFile` (exactly one).
    pub key: JwtKeySource,
    /// `permissionsClaim`: the claim holding the caller's permissions (an array of strings, or
    /// one space-separated string). Default: `permissions`.
    pub permissions_claim: String,
}

/// Where a JWT verification key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwtKeySource {
    /// `hs256SecretEnv`: an environment variable holding an HS256 shared secret.
    Hs256SecretEnv(String),
    /// `jwksFile`: a JSON Web Key Set file (RS256, ES256, … keys selected by `kid`).
    JwksFile(PathBuf),
}

pub(super) fn read_server_settings(r: &mut Reader, v: &Value, path: &JsonPath) -> ServerSettings {
    let mut out = ServerSettings::default();
    let Some(map) = r.object(v, path, crate::schema::keys::of::<sections::Server>()) else {
        return out;
    };
    if let Some(v) = map.get("http") {
        let p = path.key("http");
        if let Some(http) = r.object(v, &p, crate::schema::keys::of::<sections::Http>()) {
            out.http.limits = super::fairness::read_listener(r, http, &p);
            if let Some(v) = http.get("allowedHosts") {
                out.http.allowed_hosts = non_empty_strings(r, v, &p.key("allowedHosts"));
            }
            if let Some(v) = http.get("allowedOrigins") {
                let op = p.key("allowedOrigins");
                out.http.allowed_origins = non_empty_strings(r, v, &op);
                for (i, origin) in out.http.allowed_origins.iter().enumerate() {
                    if !crate::origin::valid_allowed_origin(origin) {
                        r.error(
                            &op.index(i),
                            ConfigErrorKind::InvalidValue,
                            format!(
                                "an origin is `null` or `scheme://host[:port|:*]` with no path (e.g. `https://app.example.com`), got `{origin}`"
                            ),
                        );
                    }
                }
            }
        }
    }
    if let Some(v) = map.get("auth") {
        out.auth = read_auth(r, v, &path.key("auth"));
    }
    if let Some(v) = map.get("admin") {
        out.admin = read_admin(r, v, &path.key("admin"));
    }
    out
}

fn read_admin(r: &mut Reader, v: &Value, path: &JsonPath) -> AdminSettings {
    let mut out = AdminSettings::default();
    let Some(map) = r.object(v, path, crate::schema::keys::of::<sections::Admin>()) else {
        return out;
    };
    if let Some(v) = map.get("listen") {
        let p = path.key("listen");
        if let Some(text) = r.string(v, &p) {
            match text.parse() {
                Ok(addr) => out.listen = Some(addr),
                Err(_) => r.error(
                    &p,
                    ConfigErrorKind::InvalidValue,
                    format!(
                        "expected IP:PORT (e.g. `127.0.0.1:9090` or `[::]:9090`), got `{text}`"
                    ),
                ),
            }
        }
    }
    if let Some(v) = map.get("metrics") {
        out.metrics = r.bool(v, &path.key("metrics")).unwrap_or(true);
    }
    if let Some(v) = map.get("metricsAuth") {
        let p = path.key("metricsAuth");
        if let Some(auth) = r.object(v, &p, crate::schema::keys::of::<sections::MetricsAuth>()) {
            out.metrics_auth = read_secret(r, auth, &p);
        }
    }
    out
}

fn non_empty_strings(r: &mut Reader, v: &Value, path: &JsonPath) -> Vec<String> {
    let mut out = Vec::new();
    for (p, s) in r.strings(v, path).unwrap_or_default() {
        if s.is_empty() {
            r.error(&p, ConfigErrorKind::InvalidValue, "an empty string");
        } else {
            out.push(s);
        }
    }
    out
}

fn read_auth(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<AuthSettings> {
    let map = r.object(v, path, crate::schema::keys::of::<sections::Auth>())?;
    let given: Vec<&str> = ["tokens", "jwt", "oauth"]
        .into_iter()
        .filter(|k| map.contains_key(*k))
        .collect();
    match given.as_slice() {
        ["tokens"] => read_tokens(r, &map["tokens"], &path.key("tokens")).map(AuthSettings::Tokens),
        ["jwt"] => read_jwt(r, &map["jwt"], &path.key("jwt")).map(AuthSettings::Jwt),
        ["oauth"] => crate::server_oauth::read_oauth(r, &map["oauth"], &path.key("oauth"))
            .map(AuthSettings::OAuth),
        [] => {
            r.error(
                path,
                ConfigErrorKind::MissingField,
                "missing `tokens` (static bearer tokens), `jwt` or `oauth`",
            );
            None
        }
        _ => {
            r.error(
                path,
                ConfigErrorKind::ConflictingKeys,
                format!(
                    "give one of `tokens` (static bearer tokens), `jwt` or `oauth`, not {}",
                    given.join(" and ")
                ),
            );
            None
        }
    }
}

fn read_tokens(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<Vec<TokenSettings>> {
    let Value::Array(items) = v else {
        r.expected(path, "an array of tokens", v);
        return None;
    };
    if items.is_empty() {
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            "no tokens: give at least one, or remove `auth`",
        );
    }
    let mut out = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let p = path.index(i);
        let Some(map) = r.object(item, &p, crate::schema::keys::of::<sections::Token>()) else {
            continue;
        };
        let name = match map.get("name") {
            Some(v) => r.string(v, &p.key("name")).map(str::to_string),
            None => {
                r.error(&p, ConfigErrorKind::MissingField, "missing `name`");
                None
            }
        };
        if let Some(n) = &name {
            if n.is_empty() {
                r.error(
                    &p.key("name"),
                    ConfigErrorKind::InvalidValue,
                    "an empty name",
                );
            } else if n == LOCAL_CALLER {
                r.error(
                    &p.key("name"),
                    ConfigErrorKind::InvalidValue,
                    format!(
                        "`{LOCAL_CALLER}` is the name of the unauthenticated local user; give the token another"
                    ),
                );
            } else if !names.insert(n.clone()) {
                r.error(
                    &p.key("name"),
                    ConfigErrorKind::InvalidValue,
                    format!(
                        "a second token named `{n}`: names identify callers, give each its own"
                    ),
                );
            }
        }
        let secret = read_secret(r, map, &p);
        let permissions = match map.get("permissions") {
            Some(v) => non_empty_strings(r, v, &p.key("permissions")),
            None => Vec::new(),
        };
        if let (Some(name), Some(secret)) = (name, secret) {
            out.push(TokenSettings {
                name,
                secret,
                permissions,
            });
        }
    }
    Some(out)
}

/// A token given by `sha256` (its hash) or `env` (a variable holding it), exactly one.
fn read_secret(
    r: &mut Reader,
    map: &serde_json::Map<String, Value>,
    path: &JsonPath,
) -> Option<TokenSecret> {
    match (map.get("sha256"), map.get("env")) {
        (Some(_), Some(_)) => {
            r.error(
                path,
                ConfigErrorKind::ConflictingKeys,
                "give either `sha256` (the token's hash) or `env` (a variable holding the token), not both",
            );
            None
        }
        (None, None) => {
            r.error(
                path,
                ConfigErrorKind::MissingField,
                "missing `sha256` (the token's SHA-256 in hex) or `env` (a variable holding the token)",
            );
            None
        }
        (Some(h), None) => {
            let hp = path.key("sha256");
            r.string(h, &hp).and_then(|s| match parse_sha256(s) {
                Some(bytes) => Some(TokenSecret::Sha256(bytes)),
                None => {
                    r.error(
                        &hp,
                        ConfigErrorKind::InvalidValue,
                        "expected 64 hex digits (e.g. from `printf %s TOKEN | sha256sum`)",
                    );
                    None
                }
            })
        }
        (None, Some(e)) => env_name(r, e, &path.key("env")).map(TokenSecret::Env),
    }
}

fn env_name(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<String> {
    let s = r.string(v, path)?;
    let ok = !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Some(s.to_string())
    } else {
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            format!("`{s}` is not an environment variable name (ASCII letters, digits and `_`)"),
        );
        None
    }
}

fn parse_sha256(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

fn read_jwt(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<JwtSettings> {
    let map = r.object(v, path, crate::schema::keys::of::<sections::Jwt>())?;
    let required = |r: &mut Reader, key: &str| match map.get(key) {
        Some(v) => {
            let s = r.string(v, &path.key(key))?;
            if s.is_empty() {
                r.error(
                    &path.key(key),
                    ConfigErrorKind::InvalidValue,
                    "an empty string",
                );
                return None;
            }
            Some(s.to_string())
        }
        None => {
            r.error(
                path,
                ConfigErrorKind::MissingField,
                format!("missing `{key}`"),
            );
            None
        }
    };
    let issuer = required(r, "issuer");
    let audience = required(r, "audience");
    let key = match (map.get("hs256SecretEnv"), map.get("jwksFile")) {
        (Some(_), Some(_)) => {
            r.error(
                path,
                ConfigErrorKind::ConflictingKeys,
                "give either `hs256SecretEnv` or `jwksFile`, not both",
            );
            None
        }
        (None, None) => {
            r.error(
                path,
                ConfigErrorKind::MissingField,
                "missing the key: `hs256SecretEnv` (a variable holding an HS256 secret) or `jwksFile` (a JWKS file)",
            );
            None
        }
        (Some(e), None) => {
            env_name(r, e, &path.key("hs256SecretEnv")).map(JwtKeySource::Hs256SecretEnv)
        }
        (None, Some(f)) => {
            let fp = path.key("jwksFile");
            match r.string(f, &fp) {
                Some("") => {
                    r.error(&fp, ConfigErrorKind::InvalidValue, "an empty path");
                    None
                }
                Some(s) => Some(JwtKeySource::JwksFile(PathBuf::from(s))),
                None => None,
            }
        }
    };
    let permissions_claim = match map.get("permissionsClaim") {
        Some(v) => r
            .string(v, &path.key("permissionsClaim"))
            .map(str::to_string),
        None => Some("permissions".to_string()),
    };
    Some(JwtSettings {
        issuer: issuer?,
        audience: audience?,
        key: key?,
        permissions_claim: permissions_claim?,
    })
}

#[cfg(test)]
mod tests {
    use crate::{AuthSettings, Config, ConfigErrorKind, JwtKeySource, TokenSecret};

    #[test]
    fn a_full_section_reads() {
        let hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let c = Config::from_json_str(&format!(
            r#"{{"server": {{"http": {{"allowedHosts": ["mcp.example.com"], "allowedOrigins": ["https://app.example.com"]}},
                "auth": {{"tokens": [{{"name": "ci", "sha256": "{hash}", "permissions": ["payments"]}}, {{"name": "dev", "env": "DEV_TOKEN"}}]}}}}}}"#
        ))
        .unwrap();
        assert_eq!(c.server.http.allowed_hosts, ["mcp.example.com"]);
        assert_eq!(c.server.http.allowed_origins, ["https://app.example.com"]);
        let Some(AuthSettings::Tokens(tokens)) = &c.server.auth else {
            panic!("{:?}", c.server.auth)
        };
        assert_eq!(tokens[0].name, "ci");
        assert!(
            matches!(tokens[0].secret, TokenSecret::Sha256(b) if b[0] == 0x9f && b[31] == 0x08)
        );
        assert_eq!(tokens[0].permissions, ["payments"]);
        assert_eq!(tokens[1].secret, TokenSecret::Env("DEV_TOKEN".into()));
        let c = Config::from_json_str(
            r#"{"server": {"auth": {"jwt": {"issuer": "i", "audience": "a", "jwksFile": "keys.json"}}}}"#,
        )
        .unwrap();
        let Some(AuthSettings::Jwt(jwt)) = &c.server.auth else {
            panic!()
        };
        assert_eq!(jwt.key, JwtKeySource::JwksFile("keys.json".into()));
        assert_eq!(jwt.permissions_claim, "permissions");
    }

    /// A token may not take the local user's name: its caller would share the local user's
    /// remembered approvals (a rule `codemode run` recorded would cover its calls).
    #[test]
    fn a_token_named_local_is_refused() {
        let errors = Config::from_json_str(
            r#"{"server": {"auth": {"tokens": [{"name": "local", "env": "T"}]}}}"#,
        )
        .unwrap_err();
        let msgs: Vec<String> = errors.errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            [
                "server.auth.tokens[0].name: `local` is the name of the unauthenticated local user; give the token another"
            ]
        );
    }

    #[test]
    fn every_problem_names_its_path() {
        let errors = Config::from_json_str(
            r#"{"server": {"http": {"allowedHosts": [""], "allowedOrigins": ["app.example.com"], "x": 1},
                "auth": {"tokens": [{"name": "ci", "sha256": "abc"}, {"name": "ci", "env": "1X"}, {"sha256": "00", "env": "A"}]}}}"#,
        )
        .unwrap_err();
        let got: Vec<(String, ConfigErrorKind)> = errors
            .errors
            .iter()
            .map(|e| (e.path().to_string(), e.kind()))
            .collect();
        assert_eq!(
            got,
            [
                ("server.http.x".to_string(), ConfigErrorKind::UnknownKey),
                (
                    "server.http.allowedHosts[0]".to_string(),
                    ConfigErrorKind::InvalidValue
                ),
                (
                    "server.http.allowedOrigins[0]".to_string(),
                    ConfigErrorKind::InvalidValue
                ),
                (
                    "server.auth.tokens[0].sha256".to_string(),
                    ConfigErrorKind::InvalidValue
                ),
                (
                    "server.auth.tokens[1].name".to_string(),
                    ConfigErrorKind::InvalidValue
                ),
                (
                    "server.auth.tokens[1].env".to_string(),
                    ConfigErrorKind::InvalidValue
                ),
                (
                    "server.auth.tokens[2]".to_string(),
                    ConfigErrorKind::MissingField
                ),
                (
                    "server.auth.tokens[2]".to_string(),
                    ConfigErrorKind::ConflictingKeys
                ),
            ]
        );
        let errors = Config::from_json_str(
            r#"{"server": {"auth": {"jwt": {"issuer": "i", "hs256SecretEnv": "S", "jwksFile": "k"}}}}"#,
        )
        .unwrap_err();
        let msgs: Vec<String> = errors.errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            [
                "server.auth.jwt: missing `audience`",
                "server.auth.jwt: give either `hs256SecretEnv` or `jwksFile`, not both",
            ]
        );
    }
}
