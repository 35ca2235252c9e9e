//! `server.auth.oauth`: codemode as an OAuth 2.1 protected resource (MCP authorization,
//! RFC 9728): which authorization servers issue its access tokens, the URL they are issued for,
//! and what each scope grants.

use std::collections::BTreeMap;

use crate::reader::{JsonPath, Reader};
use crate::{ConfigErrorKind, schema};

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

/// `oauth` as read (the URLs and scopes checked by their types), with its required keys.
pub(crate) fn read_oauth(
    r: &mut Reader,
    read: schema::server::OAuthResource,
    path: &JsonPath,
) -> Option<OAuthResourceSettings> {
    let servers = read.authorization_servers.map(|s| s.0);
    if servers.is_none() && !r.reported(&path.key("authorizationServers")) {
        r.error(
            path,
            ConfigErrorKind::MissingField,
            "missing `authorizationServers` (the issuer URLs of the accepted tokens)",
        );
    }
    let resource = read.resource.map(|u| u.0);
    if resource.is_none() && !r.reported(&path.key("resource")) {
        r.error(
            path,
            ConfigErrorKind::MissingField,
            "missing `resource` (this server's canonical URL, e.g. https://codemode.example/mcp)",
        );
    }
    Some(OAuthResourceSettings {
        authorization_servers: servers?,
        resource: resource?,
        scope_permissions: read.scope_permissions.map(|s| s.0).unwrap_or_default(),
    })
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
