//! The upstreams' resources, resource templates and prompts, seen through codemode.
//!
//! Each is named `<server>__<its name>` (as tools are), and each resource's URI is mapped to
//! `codemode://<server>/<its original URI>` — a template's too, so that a client expanding the
//! mapped template gets the mapped URI of the resource it means. The mapping is plain text:
//! stable, reversible ([`MappedUri`]), and the original stays visible in `_meta`
//! (`codemode/server`, `codemode/uri`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use codemode_runtime::BoxFuture;
use rmcp::model::{
    ClientRequest, CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult,
    MetaObject, Prompt, ReadResourceRequest, ReadResourceRequestParams, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, ResultType, ServerResult,
};
use rmcp::service::ServiceError;
use rmcp::{Peer, RoleClient};
use serde_json::{Value, json};

use super::connection::Upstream;
use super::pool::UpstreamPool;
use super::relay::InFlight;
use super::scope::CallScope;

/// The scheme and authority prefix of a mapped URI.
const URI_PREFIX: &str = "codemode://";

/// A resource URI as codemode's clients see it, `codemode://<server>/<original URI>` (see the
/// module docs): parsed from that text ([`MappedUri::parse`]), written as it
/// ([`Display`](std::fmt::Display)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappedUri<'a> {
    /// The upstream server.
    pub server: &'a str,
    /// The URI as the server knows it.
    pub original: &'a str,
}

impl<'a> MappedUri<'a> {
    /// The scheme and authority every mapped URI starts with.
    pub const PREFIX: &'static str = URI_PREFIX;

    /// The server and original URI of the mapped URI `uri`; `None` when `uri` is not one.
    pub fn parse(uri: &'a str) -> Option<Self> {
        unmap_uri(uri).map(|(server, original)| MappedUri { server, original })
    }

    /// The name a profile's `resources` globs are matched against: `<server>__<original>`,
    /// the URI's percent-escapes decoded (once, as a server decodes them), so that `secre%74`
    /// cannot slip past a glob written for `secret`.
    pub fn policy_name(&self) -> String {
        policy_name(self.server, self.original)
    }

    /// The contents of a read of this resource from its server, their URIs mapped (text and
    /// blobs unchanged), for codemode's own clients.
    pub fn map_contents(&self, result: ReadResourceResult) -> ReadResourceResult {
        map_contents(self.server, result)
    }
}

impl std::fmt::Display for MappedUri<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&map_uri(self.server, self.original))
    }
}

/// `codemode://<server>/<uri>`.
pub(crate) fn map_uri(server: &str, uri: &str) -> String {
    format!("{URI_PREFIX}{server}/{uri}")
}

/// `(server, original URI)` of a mapped URI; `None` when `uri` is not one.
pub(crate) fn unmap_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(URI_PREFIX)?;
    let (server, original) = rest.split_once('/')?;
    (!server.is_empty() && !original.is_empty()).then_some((server, original))
}

/// [`MappedUri::policy_name`] of `uri` on `server`.
pub(crate) fn policy_name(server: &str, uri: &str) -> String {
    let bytes = uri.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied(),
            bytes.get(i + 2).copied(),
        ) {
            (b'%', Some(h), Some(l)) if hex(h).is_some() && hex(l).is_some() => {
                let value = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                decoded.push(u8::try_from(value).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                decoded.push(b);
                i += 1;
            }
        }
    }
    format!("{server}__{}", String::from_utf8_lossy(&decoded))
}

/// `_meta` naming the upstream and the original URI (or name, for a prompt).
fn origin(meta: Option<MetaObject>, server: &str, key: &str, original: &str) -> Option<MetaObject> {
    let mut meta = meta.unwrap_or_default();
    meta.0.insert("codemode/server".into(), json!(server));
    meta.0.insert(key.into(), json!(original));
    Some(meta)
}

fn map_resource(server: &str, mut r: Resource) -> Resource {
    r.meta = origin(r.meta.take(), server, "codemode/uri", &r.uri);
    r.uri = map_uri(server, &r.uri);
    r.name = format!("{server}__{}", r.name);
    r
}

fn map_template(server: &str, mut t: ResourceTemplate) -> ResourceTemplate {
    t.meta = origin(
        t.meta.take(),
        server,
        "codemode/uriTemplate",
        &t.uri_template,
    );
    t.uri_template = map_uri(server, &t.uri_template);
    t.name = format!("{server}__{}", t.name);
    t
}

fn map_prompt(server: &str, mut p: Prompt) -> Prompt {
    p.meta = origin(p.meta.take(), server, "codemode/name", &p.name);
    p.name = format!("{server}__{}", p.name);
    p
}

/// [`MappedUri::map_contents`] for `server`.
pub(crate) fn map_contents(server: &str, mut result: ReadResourceResult) -> ReadResourceResult {
    for contents in &mut result.contents {
        match contents {
            ResourceContents::TextResourceContents { uri, .. }
            | ResourceContents::BlobResourceContents { uri, .. } => *uri = map_uri(server, uri),
            // A kind of contents newer than this codemode: passed on as the server sent it.
            _ => {}
        }
    }
    result
}

/// Why an upstream request about resources or prompts failed, in words naming the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamRequestError {
    /// No such server, or it offers no such thing (a client's mistake).
    NotFound(String),
    /// The server is down, timed out or answered with an error.
    Failed(String),
}

impl std::fmt::Display for UpstreamRequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamRequestError::NotFound(m) | UpstreamRequestError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for UpstreamRequestError {}

/// What an upstream offers besides tools, from its `initialize` answer.
#[derive(Clone, Copy)]
enum Offer {
    Resources,
    Prompts,
    Completions,
}

fn offers(peer: &Peer<RoleClient>, offer: Offer) -> bool {
    let Some(info) = peer.peer_info() else {
        return false;
    };
    let caps = &info.capabilities;
    match offer {
        Offer::Resources => caps.resources.is_some(),
        Offer::Prompts => caps.prompts.is_some(),
        Offer::Completions => caps.completions.is_some(),
    }
}

/// Runs `request` on `up`'s current session within its call timeout, counted as a call in
/// flight there for the eval lending `scope` (none: what the server says about it is dropped, and
/// its requests declined; another eval's call on
/// that server no longer looks alone, so nothing said about this request reaches it).
pub(crate) async fn ask<T, F>(
    up: &Upstream,
    (what, scope): (&str, Option<&CallScope>),
    request: impl FnOnce(Peer<RoleClient>) -> F,
) -> Result<T, UpstreamRequestError>
where
    F: Future<Output = Result<T, ServiceError>>,
{
    ask_as_call(up, (what, scope), |peer, _| request(peer)).await
}

/// [`ask`], the request given the call it is (to send it with [`InFlight::send`], so that the
/// server's requests on its HTTP stream reach the eval lending `scope`).
async fn ask_as_call<T, F>(
    up: &Upstream,
    (what, scope): (&str, Option<&CallScope>),
    request: impl FnOnce(Peer<RoleClient>, Arc<InFlight>) -> F,
) -> Result<T, UpstreamRequestError>
where
    F: Future<Output = Result<T, ServiceError>>,
{
    let in_flight = Arc::new(up.relays().enter(scope.map(CallScope::answerers)));
    let server = &*up.name;
    let Some(peer) = up.peer() else {
        return Err(UpstreamRequestError::Failed(format!(
            "upstream server `{server}` is not connected ({})",
            up.status().down_reason()
        )));
    };
    let timeout: Duration = up.spec.call_timeout;
    match tokio::time::timeout(timeout, request(peer, in_flight)).await {
        Err(_) => Err(UpstreamRequestError::Failed(format!(
            "upstream server `{server}` did not answer {what} within {timeout:?}"
        ))),
        Ok(Err(ServiceError::McpError(e))) if e.code.0 == -32002 || e.code.0 == -32602 => {
            Err(UpstreamRequestError::NotFound(format!(
                "upstream server `{server}` refused {what}: {}",
                e.message
            )))
        }
        Ok(Err(e)) => Err(UpstreamRequestError::Failed(format!(
            "upstream server `{server}` failed {what}: {e}"
        ))),
        Ok(Ok(value)) => Ok(value),
    }
}

impl UpstreamPool {
    /// Every connected upstream that offers `offer`, by name.
    fn offering(&self, offer: Offer) -> Vec<Arc<Upstream>> {
        self.upstreams()
            .into_iter()
            .filter(|up| up.peer().is_some_and(|p| offers(&p, offer)))
            .collect()
    }

    /// Lists from every upstream offering `offer`, mapped; a server that fails is left out
    /// (with a warning in codemode's log).
    async fn gather<T, F>(
        &self,
        offer: Offer,
        what: &str,
        list: impl Fn(Peer<RoleClient>) -> F,
        map: impl Fn(&str, T) -> T,
    ) -> Vec<T>
    where
        F: Future<Output = Result<Vec<T>, ServiceError>>,
    {
        let ups = self.offering(offer);
        let lists =
            futures::future::join_all(ups.iter().map(|up| ask(up, (what, None), &list))).await;
        let mut out = Vec::new();
        for (up, listed) in ups.iter().zip(lists) {
            match listed {
                Ok(items) => out.extend(items.into_iter().map(|item| map(&up.name, item))),
                Err(e) => tracing::warn!("{e}"),
            }
        }
        out
    }

    /// Every upstream's resources, named `<server>__<name>`, their URIs mapped (see the
    /// module docs).
    pub fn list_resources<'a>(&'a self) -> BoxFuture<'a, Vec<Resource>> {
        Box::pin(async move {
            self.gather(
                Offer::Resources,
                "resources/list",
                |p| async move { p.list_all_resources().await },
                map_resource,
            )
            .await
        })
    }

    /// Every upstream's resource templates, named and mapped like resources.
    pub fn list_resource_templates<'a>(&'a self) -> BoxFuture<'a, Vec<ResourceTemplate>> {
        Box::pin(async move {
            self.gather(
                Offer::Resources,
                "resources/templates/list",
                |p| async move { p.list_all_resource_templates().await },
                map_template,
            )
            .await
        })
    }

    /// Every upstream's prompts, named `<server>__<name>`.
    pub fn list_prompts<'a>(&'a self) -> BoxFuture<'a, Vec<Prompt>> {
        Box::pin(async move {
            self.gather(
                Offer::Prompts,
                "prompts/list",
                |p| async move { p.list_all_prompts().await },
                map_prompt,
            )
            .await
        })
    }

    pub(crate) fn server_for(
        &self,
        server: &str,
        what: &str,
    ) -> Result<Arc<Upstream>, UpstreamRequestError> {
        self.upstream(server).ok_or_else(|| {
            UpstreamRequestError::NotFound(format!(
                "{what}: there is no upstream server `{}`",
                codemode_policies::neutralize(server)
            ))
        })
    }

    /// Reads `uri` (the upstream's own URI) from `server` for the eval lending `scope` (what the
    /// server says meanwhile goes to it, its requests are put to it); the contents come back as
    /// the server sent them ([`MappedUri::map_contents`] maps their URIs for codemode's own
    /// clients).
    ///
    /// # Errors
    /// [`UpstreamRequestError`] naming the server.
    pub fn read_resource<'a>(
        &'a self,
        server: &'a str,
        uri: &'a str,
        scope: Option<&'a CallScope>,
    ) -> BoxFuture<'a, Result<ReadResourceResult, UpstreamRequestError>> {
        Box::pin(async move {
            let up = self.server_for(server, "resources/read")?;
            let params = ReadResourceRequestParams::new(uri.to_string());
            let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params));
            let name = up.name.clone();
            let result = ask_as_call(&up, ("resources/read", scope), |p, call| async move {
                match call
                    .send((&p, &name), request)
                    .await?
                    .await_response()
                    .await?
                {
                    ServerResult::ReadResourceResult(result) => Ok(result),
                    _ => Err(ServiceError::UnexpectedResponse),
                }
            })
            .await?;
            let mut result = result;
            // Forwarded as complete results: an older upstream's answer has no `resultType`, which
            // 2026-07-28 clients require (rmcp clears it again for older ones).
            result.result_type = Some(ResultType::COMPLETE);
            Ok(result)
        })
    }

    /// Gets prompt `name` (the upstream's own name) of `server` with `arguments`.
    ///
    /// # Errors
    /// [`UpstreamRequestError`] naming the server.
    pub fn get_prompt<'a>(
        &'a self,
        server: &'a str,
        name: &'a str,
        arguments: Option<serde_json::Map<String, Value>>,
    ) -> BoxFuture<'a, Result<GetPromptResult, UpstreamRequestError>> {
        Box::pin(async move {
            let up = self.server_for(server, "prompts/get")?;
            let mut params = GetPromptRequestParams::new(name.to_string());
            params.arguments = arguments;
            let mut result = ask(&up, ("prompts/get", None), |p| async move {
                p.get_prompt(params).await
            })
            .await?;
            result.result_type = Some(ResultType::COMPLETE);
            Ok(result)
        })
    }

    /// `completion/complete` at `server`, whose reference (already unmapped) is in `params`;
    /// empty values when the server offers no completions.
    ///
    /// # Errors
    /// [`UpstreamRequestError`] naming the server.
    pub fn complete<'a>(
        &'a self,
        server: &'a str,
        params: CompleteRequestParams,
    ) -> BoxFuture<'a, Result<CompleteResult, UpstreamRequestError>> {
        Box::pin(async move {
            let up = self.server_for(server, "completion/complete")?;
            if !up.peer().is_some_and(|p| offers(&p, Offer::Completions)) {
                return Ok(CompleteResult::default());
            }
            let mut result = ask(&up, ("completion/complete", None), |p| async move {
                p.complete(params).await
            })
            .await?;
            result.result_type = Some(ResultType::COMPLETE);
            Ok(result)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_map_and_unmap_exactly() {
        for (server, uri) in [
            (
                "everything",
                "demo://resource/static/document/architecture.md",
            ),
            ("fs", "file:///tmp/a b?x=1#frag"),
            ("a-b_c", "demo://resource/dynamic/text/{resourceId}"),
        ] {
            let mapped = map_uri(server, uri);
            assert_eq!(mapped, format!("codemode://{server}/{uri}"));
            assert_eq!(unmap_uri(&mapped), Some((server, uri)));
        }
        for not_mapped in [
            "demo://x",
            "codemode://",
            "codemode://everything",
            "codemode:///x",
            "codemode://s/",
        ] {
            assert_eq!(unmap_uri(not_mapped), None, "{not_mapped}");
        }
    }

    #[test]
    fn policy_names_decode_percent_escapes_once() {
        for (uri, want) in [
            ("notes://secret", "s__notes://secret"),
            ("notes://secre%74", "s__notes://secret"),
            ("notes://%73ecret", "s__notes://secret"),
            ("notes://%2573ecret", "s__notes://%73ecret"),
            ("a%2Fb%zz%4", "s__a/b%zz%4"),
            ("caf%C3%A9 %FF", "s__café \u{fffd}"),
        ] {
            assert_eq!(policy_name("s", uri), want, "{uri}");
        }
    }

    #[test]
    fn a_resource_is_named_and_mapped_keeping_its_origin() {
        let r = Resource::new("demo://r/1", "doc");
        let mapped = serde_json::to_value(map_resource("everything", r)).unwrap_or_default();
        assert_eq!(
            mapped,
            json!({"uri": "codemode://everything/demo://r/1", "name": "everything__doc",
                   "_meta": {"codemode/server": "everything", "codemode/uri": "demo://r/1"}})
        );
    }
}
