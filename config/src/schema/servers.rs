//! `mcpServers` (alias `servers`): entries as MCP clients write them.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde_json::Value;

use super::values::{Indexed, Seconds, StringMap, schema_as};

/// One upstream MCP server: `command` (stdio) or `url` (streamable HTTP), not both. An entry
/// with `"disabled": true` is skipped unread, whatever else it holds.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum ServerEntry {
    /// An entry codemode reads.
    Enabled(Box<Server>),
    /// A disabled entry, not read further.
    Disabled(Value),
}

impl JsonSchema for ServerEntry {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ServerEntry".into()
    }

    // The reader skips a disabled entry before it looks at its keys, so the schema must accept
    // anything beside `"disabled": true`; every other entry is checked key by key (`if`/`else`
    // rather than `anyOf`, so that a validator names the unknown key, not just the entry).
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let server = generator.subschema_for::<Server>();
        json_schema!({
            "description": "One upstream MCP server: `command` (stdio) or `url` (streamable HTTP), not both. An entry with `\"disabled\": true` is skipped unread.",
            "if": {
                "type": "object",
                "required": ["disabled"],
                "properties": { "disabled": { "const": true } }
            },
            "then": true,
            "else": server
        })
    }
}

/// An enabled MCP server entry.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Server {
    /// The transport, checked against the keys given: `stdio` (`command`) or `http` /
    /// `streamable-http` (`url`). `sse`, the old HTTP+SSE transport, is refused.
    #[serde(rename = "type")]
    pub(crate) kind: Option<ServerType>,
    /// The program of a stdio server.
    pub(crate) command: Option<Program>,
    /// Its arguments; `${VAR}`, `${env:VAR}` and `${VAR:-default}` are replaced.
    pub(crate) args: Option<Indexed<String>>,
    /// Extra environment variables of the program (`${VAR}` replaced).
    pub(crate) env: Option<StringMap>,
    /// The program's working directory. Default: the current one.
    pub(crate) cwd: Option<String>,
    /// The endpoint of an HTTP server, `http://` or `https://` (`${VAR}` replaced).
    pub(crate) url: Option<String>,
    /// Extra request headers of an HTTP server, e.g. `Authorization` (`${VAR}` replaced).
    pub(crate) headers: Option<StringMap>,
    /// How codemode logs in to an HTTP server that uses OAuth (the MCP authorization spec).
    /// `{}` turns discovery and registration on with every default.
    pub(crate) oauth: Option<OAuth>,
    /// How long one call may take. Default: 60.
    pub(crate) timeout_seconds: Option<Seconds>,
    /// How long starting the server may take. Default: 30.
    pub(crate) start_timeout_seconds: Option<Seconds>,
    /// `true` gives each eval a connection of its own (a child process, or an MCP session),
    /// opened at its first call and closed when it ends, so that the server's requests to the
    /// human over stdio always reach the eval whose call they came during. Default: false.
    pub(crate) isolate_sessions: Option<bool>,
    /// `true` skips the entry.
    pub(crate) disabled: Option<bool>,
    /// Another MCP client's setting: accepted and ignored, with a warning (what runs without
    /// asking is a profile's business).
    pub(crate) auto_approve: Option<Value>,
    /// Another MCP client's setting: accepted and ignored, with a warning.
    pub(crate) always_allow: Option<Value>,
}

/// The program of a stdio server, not empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Program(pub(crate) String);

impl<'de> Deserialize<'de> for Program {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d)? {
            command if command.is_empty() => Err(de::Error::custom("the command is empty")),
            command => Ok(Program(command)),
        }
    }
}

schema_as!(String => Program);

/// A server's `type`.
// (Read by its name with the reader's messages, `sse` refused with the reason.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
pub(crate) enum ServerType {
    /// A child process speaking MCP on stdin/stdout.
    #[serde(rename = "stdio")]
    Stdio,
    /// A streamable-HTTP endpoint.
    #[serde(rename = "http")]
    Http,
    /// A streamable-HTTP endpoint (the name other clients use).
    #[serde(rename = "streamable-http")]
    StreamableHttp,
    /// A streamable-HTTP endpoint (the camel-case spelling).
    #[serde(rename = "streamableHttp")]
    StreamableHttpCamel,
}

impl<'de> Deserialize<'de> for ServerType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d)?.as_str() {
            "stdio" => Ok(ServerType::Stdio),
            "http" => Ok(ServerType::Http),
            "streamable-http" => Ok(ServerType::StreamableHttp),
            "streamableHttp" => Ok(ServerType::StreamableHttpCamel),
            "sse" => Err(de::Error::custom(
                "`sse` (the old HTTP+SSE transport) is not supported: codemode's MCP client \
                 (rmcp) has no client for it; use the server's streamable HTTP endpoint instead \
                 (`\"type\": \"http\"` with its URL, often ending in `/mcp`)",
            )),
            other => Err(de::Error::custom(format!(
                "unknown server type `{other}`; allowed: `stdio`, `http`, `streamable-http`"
            ))),
        }
    }
}

/// `oauth` of an HTTP server: every string accepts `${env:VAR}`; the secrets never appear in
/// messages, logs or the audit.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct OAuth {
    /// A client registered beforehand. Default: a client ID metadata document
    /// (`clientMetadataUrl`) where supported, else dynamic registration.
    pub(crate) client_id: Option<String>,
    /// That client's secret (needs `clientId`).
    pub(crate) client_secret: Option<String>,
    /// A PEM private key for `private_key_jwt` (the client-credentials grant only).
    pub(crate) private_key: Option<String>,
    /// The private key's algorithm. Default: ES256 for an EC key, RS256 for an RSA key.
    // (A name, read after its `${VAR}` references are replaced.)
    #[schemars(with = "Option<SigningAlgorithm>")]
    pub(crate) signing_algorithm: Option<String>,
    /// `authorization_code` (default: a person logs in with `codemode auth login`) or
    /// `client_credentials` (headless, with `clientSecret` or `privateKey`).
    #[schemars(with = "Option<GrantType>")]
    pub(crate) grant_type: Option<String>,
    /// Scopes to ask for. Default: the server's challenge, else its `scopes_supported`.
    pub(crate) scopes: Option<Indexed<String>>,
    /// HTTPS URL of this client's metadata document, used as its client ID where supported.
    pub(crate) client_metadata_url: Option<String>,
    /// A loopback `http://127.0.0.1:<port>/<path>` codemode listens on during a login.
    /// Default: `http://127.0.0.1:<a free port>/callback`.
    pub(crate) redirect_uri: Option<String>,
}

/// An OAuth grant.
#[derive(Debug, Clone, Copy, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum GrantType {
    /// A person logs in once; refresh tokens keep it alive.
    AuthorizationCode,
    /// codemode gets tokens itself with the client's own credentials.
    ClientCredentials,
}

/// A JOSE signature algorithm.
#[derive(Debug, Clone, Copy, JsonSchema)]
pub(crate) enum SigningAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    #[serde(rename = "RS256")]
    Rs256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    #[serde(rename = "RS384")]
    Rs384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    #[serde(rename = "RS512")]
    Rs512,
    /// ECDSA P-256 with SHA-256.
    #[serde(rename = "ES256")]
    Es256,
    /// ECDSA P-384 with SHA-384.
    #[serde(rename = "ES384")]
    Es384,
}
