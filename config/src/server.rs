//! The `server` section: how `codemode serve --http` accepts requests — which `Host` and
//! `Origin` headers it answers, and who may call it (`auth`: static bearer tokens or JWTs).
//!
//! Only the shape is checked here (JSON paths in every error); reading the environment
//! variables and the JWKS file happens when the server starts (`codemode-host`'s `auth`).

use std::path::PathBuf;

use serde_json::Value;

use crate::de;
use crate::error::ConfigErrorKind;
use crate::reader::{JsonPath, Reader};
use crate::schema;

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

/// Reads `server` at `path`: its values through its serde type (each value's own checks: URLs,
/// origins, non-empty strings), then what concerns several keys (one auth mode, one secret,
/// required keys, unique token names) and the names of environment variables.
pub(super) fn read_server_settings(r: &mut Reader, v: &Value, path: &JsonPath) -> ServerSettings {
    let mut out = ServerSettings::default();
    let Some(read) = de::read::<schema::server::Server>(r, v, path) else {
        return out;
    };
    if let Some(http) = read.http {
        out.http.limits = super::fairness::listener_limits(&http);
        out.http.allowed_hosts = http.allowed_hosts.map(|h| h.0).unwrap_or_default();
        out.http.allowed_origins = http.allowed_origins.map(|o| o.0).unwrap_or_default();
    }
    if let Some(auth) = read.auth {
        out.auth = read_auth(r, auth, &path.key("auth"));
    }
    if let Some(admin) = read.admin {
        out.admin = read_admin(r, admin, &path.key("admin"));
    }
    out
}

fn read_admin(r: &mut Reader, read: schema::server::Admin, path: &JsonPath) -> AdminSettings {
    let mut out = AdminSettings::default();
    if let Some(text) = read.listen {
        match text.parse() {
            Ok(addr) => out.listen = Some(addr),
            Err(_) => r.error(
                &path.key("listen"),
                ConfigErrorKind::InvalidValue,
                format!("expected IP:PORT (e.g. `127.0.0.1:9090` or `[::]:9090`), got `{text}`"),
            ),
        }
    }
    out.metrics = read.metrics.unwrap_or(true);
    if let Some(auth) = read.metrics_auth {
        let p = path.key("metricsAuth");
        let secret = Secret::given(r, auth.sha256, auth.env, &p);
        out.metrics_auth = read_secret(r, secret, &p);
    }
    out
}

fn read_auth(r: &mut Reader, read: schema::server::Auth, path: &JsonPath) -> Option<AuthSettings> {
    // A mode given with a wrong value counts as given: its error is reported already.
    let given_at = |r: &Reader, given: bool, key: &str| given || r.reported(&path.key(key));
    let given: Vec<&str> = [
        ("tokens", given_at(r, read.tokens.is_some(), "tokens")),
        ("jwt", given_at(r, read.jwt.is_some(), "jwt")),
        ("oauth", given_at(r, read.oauth.is_some(), "oauth")),
    ]
    .into_iter()
    .filter_map(|(key, given)| given.then_some(key))
    .collect();
    match given.as_slice() {
        [_] => {}
        [] => {
            r.error(
                path,
                ConfigErrorKind::MissingField,
                "missing `tokens` (static bearer tokens), `jwt` or `oauth`",
            );
            return None;
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
            return None;
        }
    }
    if let Some(tokens) = read.tokens {
        read_tokens(r, tokens.0, &path.key("tokens")).map(AuthSettings::Tokens)
    } else if let Some(jwt) = read.jwt {
        read_jwt(r, jwt, &path.key("jwt")).map(AuthSettings::Jwt)
    } else {
        let oauth = read.oauth?;
        crate::server_oauth::read_oauth(r, oauth, &path.key("oauth")).map(AuthSettings::OAuth)
    }
}

fn read_tokens(
    r: &mut Reader,
    tokens: Vec<schema::server::Token>,
    path: &JsonPath,
) -> Option<Vec<TokenSettings>> {
    if tokens.is_empty() && !r.reported(path) {
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            "no tokens: give at least one, or remove `auth`",
        );
    }
    let mut out = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for (i, token) in tokens.into_iter().enumerate() {
        let p = path.index(i);
        let name = token_name(r, token.name, &mut names, &p);
        let secret = Secret::given(r, token.sha256, token.env, &p);
        let secret = read_secret(r, secret, &p);
        if let (Some(name), Some(secret)) = (name, secret) {
            out.push(TokenSettings {
                name,
                secret,
                permissions: token.permissions.map(|p| p.0).unwrap_or_default(),
            });
        }
    }
    Some(out)
}

/// The name of the token at `path`: given, not empty, not [`LOCAL_CALLER`], not one of `names`
/// (the tokens before it), into which it goes.
fn token_name(
    r: &mut Reader,
    name: Option<String>,
    names: &mut std::collections::BTreeSet<String>,
    path: &JsonPath,
) -> Option<String> {
    let p = path.key("name");
    let Some(name) = name else {
        if !r.reported(&p) {
            r.error(path, ConfigErrorKind::MissingField, "missing `name`");
        }
        return None;
    };
    let problem = if name.is_empty() {
        "an empty name".to_string()
    } else if name == LOCAL_CALLER {
        format!(
            "`{LOCAL_CALLER}` is the name of the unauthenticated local user; give the token another"
        )
    } else if !names.insert(name.clone()) {
        format!("a second token named `{name}`: names identify callers, give each its own")
    } else {
        return Some(name);
    };
    r.error(&p, ConfigErrorKind::InvalidValue, problem);
    None
}

/// The keys of a token's secret as read: each `None` when left out, `Some(None)` when given
/// with a value of the wrong type (reported already).
struct Secret {
    sha256: Option<Option<String>>,
    env: Option<Option<String>>,
}

impl Secret {
    fn given(r: &Reader, sha256: Option<String>, env: Option<String>, path: &JsonPath) -> Self {
        let given = |value: Option<String>, key: &str| match value {
            Some(v) => Some(Some(v)),
            None => r.reported(&path.key(key)).then_some(None),
        };
        Secret {
            sha256: given(sha256, "sha256"),
            env: given(env, "env"),
        }
    }
}

/// A token given by `sha256` (its hash) or `env` (a variable holding it), exactly one.
fn read_secret(r: &mut Reader, secret: Secret, path: &JsonPath) -> Option<TokenSecret> {
    match (secret.sha256, secret.env) {
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
        (Some(hash), None) => match parse_sha256(&hash?) {
            Some(bytes) => Some(TokenSecret::Sha256(bytes)),
            None => {
                r.error(
                    &path.key("sha256"),
                    ConfigErrorKind::InvalidValue,
                    "expected 64 hex digits (e.g. from `printf %s TOKEN | sha256sum`)",
                );
                None
            }
        },
        (None, Some(env)) => env_name(r, env?, &path.key("env")).map(TokenSecret::Env),
    }
}

fn env_name(r: &mut Reader, name: String, path: &JsonPath) -> Option<String> {
    let ok = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        return Some(name);
    }
    r.error(
        path,
        ConfigErrorKind::InvalidValue,
        format!("`{name}` is not an environment variable name (ASCII letters, digits and `_`)"),
    );
    None
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

fn read_jwt(r: &mut Reader, read: schema::server::Jwt, path: &JsonPath) -> Option<JwtSettings> {
    let required = |r: &mut Reader, value: Option<String>, key: &str| {
        let p = path.key(key);
        match value {
            Some(s) if s.is_empty() => {
                r.error(&p, ConfigErrorKind::InvalidValue, "an empty string");
                None
            }
            Some(s) => Some(s),
            None if r.reported(&p) => None,
            None => {
                let message = format!("missing `{key}`");
                r.error(path, ConfigErrorKind::MissingField, message);
                None
            }
        }
    };
    let issuer = required(r, read.issuer, "issuer");
    let audience = required(r, read.audience, "audience");
    let key = jwt_key(r, read.hs256_secret_env, read.jwks_file, path);
    let permissions_claim = match read.permissions_claim {
        Some(claim) => Some(claim),
        None if r.reported(&path.key("permissionsClaim")) => None,
        None => Some("permissions".to_string()),
    };
    Some(JwtSettings {
        issuer: issuer?,
        audience: audience?,
        key: key?,
        permissions_claim: permissions_claim?,
    })
}

/// The JWT verification key: `hs256SecretEnv` or `jwksFile` (of the `jwt` object at `path`).
fn jwt_key(
    r: &mut Reader,
    secret_env: Option<String>,
    jwks_file: Option<String>,
    path: &JsonPath,
) -> Option<JwtKeySource> {
    let given = |r: &Reader, value: &Option<String>, key: &str| {
        value.is_some() || r.reported(&path.key(key))
    };
    let secret_given = given(r, &secret_env, "hs256SecretEnv");
    let file_given = given(r, &jwks_file, "jwksFile");
    match (secret_given, file_given) {
        (true, true) => {
            r.error(
                path,
                ConfigErrorKind::ConflictingKeys,
                "give either `hs256SecretEnv` or `jwksFile`, not both",
            );
            None
        }
        (false, false) => {
            r.error(
                path,
                ConfigErrorKind::MissingField,
                "missing the key: `hs256SecretEnv` (a variable holding an HS256 secret) or `jwksFile` (a JWKS file)",
            );
            None
        }
        (true, false) => {
            env_name(r, secret_env?, &path.key("hs256SecretEnv")).map(JwtKeySource::Hs256SecretEnv)
        }
        (false, true) => match jwks_file? {
            file if file.is_empty() => {
                let p = path.key("jwksFile");
                r.error(&p, ConfigErrorKind::InvalidValue, "an empty path");
                None
            }
            file => Some(JwtKeySource::JwksFile(PathBuf::from(file))),
        },
    }
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
    fn every_problem_of_the_section_is_reported_at_once() {
        let errors = Config::from_json_str(
            r#"{"server": {"http": {"allowedOrigins": ["", "app.example.com"], "maxSessions": "many"},
                "admin": {"listen": "nowhere", "metricsAuth": {}},
                "auth": {"jwt": {"issuer": 5, "audience": "", "hs256SecretEnv": "1X"}}}}"#,
        )
        .unwrap_err();
        let got: Vec<(&str, ConfigErrorKind, &str)> = errors
            .errors
            .iter()
            .map(|e| (e.path(), e.kind(), e.message()))
            .collect();
        use ConfigErrorKind::*;
        assert_eq!(
            got,
            [
                (
                    "server.http.allowedOrigins[0]",
                    InvalidValue,
                    "an empty string"
                ),
                (
                    "server.http.allowedOrigins[1]",
                    InvalidValue,
                    "an origin is `null` or `scheme://host[:port|:*]` with no path (e.g. `https://app.example.com`), got `app.example.com`"
                ),
                (
                    "server.http.maxSessions",
                    WrongType,
                    "expected a non-negative whole number, found a string (\"many\")"
                ),
                // A required key whose value is wrong is not also missing.
                (
                    "server.auth.jwt.issuer",
                    WrongType,
                    "expected a string, found a number (5)"
                ),
                ("server.auth.jwt.audience", InvalidValue, "an empty string"),
                (
                    "server.auth.jwt.hs256SecretEnv",
                    InvalidValue,
                    "`1X` is not an environment variable name (ASCII letters, digits and `_`)"
                ),
                (
                    "server.admin.listen",
                    InvalidValue,
                    "expected IP:PORT (e.g. `127.0.0.1:9090` or `[::]:9090`), got `nowhere`"
                ),
                (
                    "server.admin.metricsAuth",
                    MissingField,
                    "missing `sha256` (the token's SHA-256 in hex) or `env` (a variable holding the token)"
                ),
            ]
        );
    }

    #[test]
    fn a_mode_or_secret_given_with_a_wrong_value_is_neither_missing_nor_alone() {
        let errors = Config::from_json_str(
            r#"{"server": {"auth": {"tokens": 1, "jwt": {"issuer": "i", "audience": "a", "jwksFile": "k"}}}}"#,
        )
        .unwrap_err();
        let msgs: Vec<String> = errors.errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            [
                "server.auth.tokens: expected an array of tokens, found a number (1)",
                "server.auth: give one of `tokens` (static bearer tokens), `jwt` or `oauth`, not tokens and jwt",
            ]
        );
        let errors = Config::from_json_str(
            r#"{"server": {"auth": {"tokens": [{"name": 1, "sha256": 2}, {"name": "ok", "env": true, "sha256": "x"}]}}}"#,
        )
        .unwrap_err();
        let msgs: Vec<String> = errors.errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            [
                "server.auth.tokens[0].name: expected a string, found a number (1)",
                "server.auth.tokens[0].sha256: expected a string, found a number (2)",
                "server.auth.tokens[1].env: expected a string, found a boolean (true)",
                "server.auth.tokens[1]: give either `sha256` (the token's hash) or `env` (a variable holding the token), not both",
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
