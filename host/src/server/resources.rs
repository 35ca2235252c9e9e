//! The upstreams' resources and prompts through codemode's own MCP server: listed under
//! `<server>__<name>` with their URIs mapped ([`codemode_upstream::resources`]), read and got on
//! the upstream that owns them, decided by the profile of the session's `eval` tool (its
//! `resources` and `prompts` globs over `<server>__<original URI>` and `<server>__<prompt
//! name>`; a caller who may not use `eval` sees none), `outputs` rules applied to what is read
//! (paths into `{contents: [...]}`), every read and get audited (`event: "access"`).

use std::sync::Arc;

use codemode_policies::AuditRecord;
use codemode_policies::{AccessAuditRecord, Caller, Decision, Profile, bounded, neutralize};
use codemode_runtime::CallStatus;
use codemode_upstream::resources::{MappedUri, UpstreamRequestError};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult,
    Reference,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;

use super::eval_tools::{EVAL_TOOL, missing_permissions};
use super::handler::CodemodeServer;

/// The longest a client-chosen URI or name is shown in a message or the audit log.
pub(super) const SHOWN_CHARS: usize = 300;

/// What governs one request: the caller, and the profile when the caller may use `eval`.
pub(super) struct Governed {
    pub(super) caller: Caller,
    /// `None` outside: the caller may not use `eval`. `Some(None)`: `eval` is unprofiled.
    profile: Option<Option<Arc<Profile>>>,
}

impl super::watchers::Judge for super::state::ServerState {
    fn lets_resource(&self, caller: &Caller, name: &str) -> bool {
        Governed::of(self, caller.clone()).lets_resource(name)
    }
}

impl Governed {
    /// What governs `caller` under the config in force now (a reload may have changed it).
    pub(super) fn of(state: &super::state::ServerState, caller: Caller) -> Governed {
        let config = state.config();
        let profile = missing_permissions(&config, EVAL_TOOL, &caller)
            .is_empty()
            .then(|| {
                config
                    .evaluation
                    .default_profile
                    .as_deref()
                    .and_then(|name| config.profile(name).cloned())
            });
        Governed { caller, profile }
    }

    pub(super) fn lets_resource(&self, name: &str) -> bool {
        match &self.profile {
            None => false,
            Some(None) => true,
            Some(Some(p)) => p.lets_resource(name),
        }
    }

    fn lets_prompt(&self, name: &str) -> bool {
        match &self.profile {
            None => false,
            Some(None) => true,
            Some(Some(p)) => p.lets_prompt(name),
        }
    }

    fn profile_name(&self) -> Option<String> {
        self.profile
            .as_ref()
            .and_then(|p| p.as_ref().map(|p| p.name().to_string()))
    }
}

/// The policy name of a mapped URI (see [`MappedUri::policy_name`]).
fn resource_name(mapped: &str) -> Option<String> {
    MappedUri::parse(mapped).map(|m| m.policy_name())
}

pub(super) fn not_found(what: &str) -> McpError {
    McpError::resource_not_found(what.to_string(), None)
}

impl CodemodeServer {
    pub(super) fn governed(&self, ctx: &RequestContext<RoleServer>) -> Governed {
        Governed::of(&self.state, crate::auth::caller_of(&ctx.extensions))
    }

    pub(super) fn audit_access(&self, governed: &Governed, mut record: AccessAuditRecord) {
        if let Some(sink) = self.state.audit() {
            record.caller = governed.caller.name.clone();
            record.session_id = Some(self.session_id.clone());
            record.profile = governed.profile_name();
            sink.record(codemode_policies::AuditRecord::Access(record));
        }
    }

    pub(super) async fn resources_list(
        &self,
        ctx: &RequestContext<RoleServer>,
    ) -> ListResourcesResult {
        let governed = self.governed(ctx);
        let mut listed = self.state.upstreams.list_resources().await;
        listed.retain(|r| resource_name(&r.uri).is_some_and(|n| governed.lets_resource(&n)));
        ListResourcesResult::with_all_items(listed)
    }

    pub(super) async fn resource_templates_list(
        &self,
        ctx: &RequestContext<RoleServer>,
    ) -> ListResourceTemplatesResult {
        let governed = self.governed(ctx);
        let mut listed = self.state.upstreams.list_resource_templates().await;
        // A template is listed when the profile lets through some resource it can name: its
        // own text (with its `{variables}`) is checked as the name.
        listed
            .retain(|t| resource_name(&t.uri_template).is_some_and(|n| governed.lets_resource(&n)));
        ListResourceTemplatesResult::with_all_items(listed)
    }

    pub(super) async fn prompts_list(&self, ctx: &RequestContext<RoleServer>) -> ListPromptsResult {
        let governed = self.governed(ctx);
        let mut listed = self.state.upstreams.list_prompts().await;
        listed.retain(|p| governed.lets_prompt(&p.name));
        ListPromptsResult::with_all_items(listed)
    }

    /// `resources/read` of a mapped URI.
    pub(super) async fn resource_read(
        &self,
        uri: &str,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, McpError> {
        let governed = self.governed(ctx);
        let shown = bounded(uri, SHOWN_CHARS);
        let Some(MappedUri { server, original }) = MappedUri::parse(uri) else {
            let mut record = AccessAuditRecord::now("", "resources/read", &shown);
            record.decision = Decision::Denied;
            record.status = CallStatus::Denied;
            record.reason = Some("not a resource of codemode".into());
            self.audit_access(&governed, record);
            return Err(not_found(&format!(
                "`{shown}` is not a resource of codemode: its resources are `codemode://<server>/<the upstream's URI>` (see resources/list)"
            )));
        };
        let name = MappedUri { server, original }.policy_name();
        let mut record = AccessAuditRecord::now("", "resources/read", &name);
        if !governed.lets_resource(&name) {
            record.decision = Decision::Denied;
            record.status = CallStatus::Denied;
            record.reason = Some("the profile does not let this resource through".into());
            self.audit_access(&governed, record);
            // As unknown as a resource that does not exist.
            return Err(not_found(&format!("no resource `{shown}`")));
        }
        let read = self
            .state
            .upstreams
            .read_resource(server, original, None)
            .await;
        let result = match read {
            Ok(result) => MappedUri { server, original }.map_contents(result),
            Err(e) => {
                record.status = CallStatus::Error;
                record.reason = Some(e.to_string());
                self.audit_access(&governed, record);
                return Err(upstream_error(e));
            }
        };
        let mut value = serde_json::to_value(&result).unwrap_or(Value::Null);
        record.output_sha256 = Some(AuditRecord::sha256_hex(
            AuditRecord::canonical_json(&value).as_bytes(),
        ));
        let outputs = self.state.config().outputs.clone();
        record.redacted_paths = outputs.apply(&name, &mut value);
        let masked = if record.redacted_paths.is_empty() {
            Ok(result)
        } else {
            serde_json::from_value::<ReadResourceResult>(value)
        };
        match masked {
            Ok(result) => {
                self.audit_access(&governed, record);
                Ok(result)
            }
            Err(_) => {
                // The rule removed or masked what a read must carry (a URI, the contents): the
                // read cannot be answered in part, so it is refused.
                let why = format!(
                    "the `outputs` rules for `{}` remove what a resource read must carry ({})",
                    neutralize(&name),
                    record.redacted_paths.join(", ")
                );
                record.decision = Decision::Denied;
                record.status = CallStatus::Denied;
                record.reason = Some(why.clone());
                self.audit_access(&governed, record);
                Err(McpError::invalid_request(why, None))
            }
        }
    }

    /// `prompts/get` of `<server>__<name>`.
    pub(super) async fn prompt_get(
        &self,
        params: GetPromptRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResult, McpError> {
        let governed = self.governed(ctx);
        let name = params.name.clone();
        let mut record = AccessAuditRecord::now("", "prompts/get", &name);
        let unknown = || {
            McpError::invalid_params(format!("no prompt `{}`", bounded(&name, SHOWN_CHARS)), None)
        };
        let Some((server, prompt)) = name.split_once("__") else {
            record.decision = Decision::Denied;
            record.status = CallStatus::Denied;
            record.reason = Some("not a prompt of codemode".into());
            self.audit_access(&governed, record);
            return Err(unknown());
        };
        if !governed.lets_prompt(&name) {
            record.decision = Decision::Denied;
            record.status = CallStatus::Denied;
            record.reason = Some("the profile does not let this prompt through".into());
            self.audit_access(&governed, record);
            return Err(unknown());
        }
        let got = self
            .state
            .upstreams
            .get_prompt(server, prompt, params.arguments)
            .await;
        match got {
            Ok(result) => {
                let value = serde_json::to_value(&result).unwrap_or(Value::Null);
                record.output_sha256 = Some(AuditRecord::sha256_hex(
                    AuditRecord::canonical_json(&value).as_bytes(),
                ));
                self.audit_access(&governed, record);
                Ok(result)
            }
            Err(e) => {
                record.status = CallStatus::Error;
                record.reason = Some(e.to_string());
                self.audit_access(&governed, record);
                Err(upstream_error(e))
            }
        }
    }

    /// `completion/complete`: forwarded to the upstream the reference names; empty values for
    /// a reference that names no upstream's prompt or resource the session may see.
    pub(super) async fn completion(
        &self,
        mut params: CompleteRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> CompleteResult {
        let governed = self.governed(ctx);
        let server = match &mut params.r#ref {
            Reference::Prompt(prompt) => {
                let full = prompt.name.clone();
                match full.split_once("__") {
                    Some((server, name)) if governed.lets_prompt(&full) => {
                        prompt.name = name.to_string();
                        Some(server.to_string())
                    }
                    _ => None,
                }
            }
            Reference::Resource(resource) => {
                let mapped = resource.uri.clone();
                match MappedUri::parse(&mapped) {
                    Some(parsed) if governed.lets_resource(&parsed.policy_name()) => {
                        resource.uri = parsed.original.to_string();
                        Some(parsed.server.to_string())
                    }
                    _ => None,
                }
            }
            // A kind of reference newer than this codemode: nothing to complete.
            _ => None,
        };
        let Some(server) = server else {
            return CompleteResult::default();
        };
        match self.state.upstreams.complete(&server, params).await {
            Ok(result) => result,
            Err(e) => {
                tracing::info!("completion/complete: {e}");
                CompleteResult::default()
            }
        }
    }
}

/// An upstream's failure as the client's error: not found stays not found; a failure is an
/// internal error of the upstream's, named in the message (never codemode's own).
pub(super) fn upstream_error(e: UpstreamRequestError) -> McpError {
    match e {
        UpstreamRequestError::NotFound(m) => McpError::resource_not_found(neutralize(&m), None),
        UpstreamRequestError::Failed(m) => McpError::internal_error(neutralize(&m), None),
    }
}
