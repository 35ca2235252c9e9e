//! `server.auth.oauth`: codemode as an OAuth 2.1 protected resource (MCP authorization,
//! RFC 9728): which authorization servers issue its access tokens, the URL they are issued for,
//! and what each scope grants.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::reader::{JsonPath, Reader};
use crate::{ConfigErrorKind, schema::sections};

/// `server.auth.oauth`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthResourceSettings {
    /// `authorizationServers`: the issuer URLs whose tokens are accepted (at least one); each
    /// one's keys are found by discovery (RFC 8414, then OpenID Connect).
    pub authorization_servers: Vec<String>,
    /// `resource`: this server's canonical URL (`https://codemode.example/mcp`), the `aud` every
    /// token must carry.
    pub resource: String,
    /// `scopePermissions`: the permissions each scope grants. A scope not listed grants none.
    pub scope_permissions: BTreeMap<String, Vec<String>>,
}

pub(crate) fn read_oauth(
    r: &mut Reader,
    v: &Value,
    path: &JsonPath,
) -> Option<OAuthResourceSettings> {
    let map = r.object(
        v,
        path,
        crate::schema::keys::of::<sections::OAuthResource>(),
    )?;
    let servers = match map.get("authorizationServers") {
        None => {
            r.error(
                path,
                ConfigErrorKind::MissingField,
                "missing `authorizationServers` (the issuer URLs of the accepted tokens)",
            );
            None
        }
        Some(v) => read_issuers(r, v, &path.key("authorizationServers")),
    };
    let resource = match map.get("resource") {
        None => {
            r.error(
                path,
                ConfigErrorKind::MissingField,
                "missing `resource` (this server's canonical URL, e.g. https://codemode.example/mcp)",
            );
            None
        }
        Some(v) => {
            let p = path.key("resource");
            let s = r.string(v, &p)?.to_string();
            check_url(r, &p, &s, "this server's canonical URL").then_some(s)
        }
    };
    let scope_permissions = match map.get("scopePermissions") {
        None => Some(BTreeMap::new()),
        Some(v) => read_scopes(r, v, &path.key("scopePermissions")),
    };
    Some(OAuthResourceSettings {
        authorization_servers: servers?,
        resource: resource?,
        scope_permissions: scope_permissions?,
    })
}

fn read_issuers(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<Vec<String>> {
    let list = r.strings(v, path)?;
    if list.is_empty() {
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            "name at least one issuer URL",
        );
        return None;
    }
    let before = r.error_count();
    for (p, issuer) in &list {
        check_url(r, p, issuer, "an issuer URL");
    }
    (r.error_count() == before).then(|| list.into_iter().map(|(_, s)| s).collect())
}

fn read_scopes(
    r: &mut Reader,
    v: &Value,
    path: &JsonPath,
) -> Option<BTreeMap<String, Vec<String>>> {
    let Value::Object(map) = v else {
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            "expected an object of scope → [permission, …]",
        );
        return None;
    };
    let before = r.error_count();
    let mut out = BTreeMap::new();
    for (scope, permissions) in map {
        let p = path.key(scope);
        if scope.is_empty()
            || scope
                .chars()
                .any(|c| c == '"' || c == '\\' || !c.is_ascii_graphic())
        {
            // RFC 6749 §3.3: a scope token is printable ASCII without space, `"` or `\`.
            r.error(
                &p,
                ConfigErrorKind::InvalidValue,
                "a scope is printable ASCII without spaces, `\"` or `\\`",
            );
            continue;
        }
        if let Some(list) = r.strings(permissions, &p) {
            out.insert(scope.clone(), list.into_iter().map(|(_, s)| s).collect());
        }
    }
    (r.error_count() == before).then_some(out)
}

/// Whether `url` is an absolute `https` URL (`http` only on a loopback host) without a fragment
/// or credentials; an error at `path` naming `what` otherwise.
fn check_url(r: &mut Reader, path: &JsonPath, url: &str, what: &str) -> bool {
    let problem = match url::Url::parse(url) {
        Err(e) => Some(format!("expected {what}: {e}")),
        Ok(u) if u.fragment().is_some() => Some(format!("{what} has no `#fragment`")),
        Ok(u) if !u.username().is_empty() || u.password().is_some() => {
            Some(format!("{what} carries no credentials"))
        }
        Ok(u) if u.scheme() == "https" => None,
        Ok(u) if u.scheme() == "http" && is_loopback(&u) => None,
        Ok(_) => Some(format!(
            "expected {what} with `https://` (`http://` only on a loopback host)"
        )),
    };
    if let Some(problem) = &problem {
        r.error(path, ConfigErrorKind::InvalidValue, problem.as_str());
    }
    problem.is_none()
}

fn is_loopback(u: &url::Url) -> bool {
    match u.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::{AuthSettings, Config};

    fn errors(oauth: &str) -> Vec<String> {
        let json = format!(r#"{{"server": {{"auth": {{"oauth": {oauth}}}}}}}"#);
        Config::from_json_str(&json)
            .expect_err("invalid")
            .errors
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_protected_resource_config_is_read() {
        let c = Config::from_json_str(
            r#"{"server": {"auth": {"oauth": {"authorizationServers": ["https://id.example/realms/a"],
                "resource": "https://codemode.example/mcp",
                "scopePermissions": {"codemode:approve": ["approve"]}}}}}"#,
        )
        .unwrap();
        let Some(AuthSettings::OAuth(oauth)) = &c.server.auth else {
            panic!("{:?}", c.server.auth)
        };
        assert_eq!(oauth.authorization_servers, ["https://id.example/realms/a"]);
        assert_eq!(oauth.resource, "https://codemode.example/mcp");
        assert_eq!(oauth.scope_permissions["codemode:approve"], ["approve"]);
    }

    #[test]
    fn a_bad_protected_resource_config_says_what_and_where() {
        assert_eq!(
            errors("{}"),
            [
                "server.auth.oauth: missing `authorizationServers` (the issuer URLs of the accepted tokens)",
                "server.auth.oauth: missing `resource` (this server's canonical URL, e.g. https://codemode.example/mcp)",
            ]
        );
        // One mode only.
        let json = r#"{"server": {"auth": {"tokens": [], "oauth": {}}}}"#;
        let both: Vec<String> = Config::from_json_str(json)
            .expect_err("two modes")
            .errors
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            both,
            [
                "server.auth: give one of `tokens` (static bearer tokens), `jwt` or `oauth`, not tokens and oauth"
            ]
        );
        assert_eq!(
            errors(r#"{"authorizationServers": [], "resource": "http://codemode.example/mcp"}"#),
            [
                "server.auth.oauth.authorizationServers: name at least one issuer URL",
                "server.auth.oauth.resource: expected this server's canonical URL with `https://` (`http://` only on a loopback host)",
            ]
        );
        assert_eq!(
            errors(
                r#"{"authorizationServers": ["not a url", "https://u:p@id.example"],
                    "resource": "https://codemode.example/mcp#x",
                    "scopePermissions": {"a b": ["x"], "ok": "approve"}}"#
            ),
            [
                "server.auth.oauth.authorizationServers[0]: expected an issuer URL: relative URL without a base",
                "server.auth.oauth.authorizationServers[1]: an issuer URL carries no credentials",
                "server.auth.oauth.resource: this server's canonical URL has no `#fragment`",
                "server.auth.oauth.scopePermissions[\"a b\"]: a scope is printable ASCII without spaces, `\"` or `\\`",
                "server.auth.oauth.scopePermissions.ok: expected an array of strings, found a string (\"approve\")",
            ]
        );
        assert_eq!(
            errors(r#"{"authorizationServers": ["https://id.example"], "resource": "https://c.example/mcp", "audience": "x"}"#)
                .len(),
            1
        );
    }
}
