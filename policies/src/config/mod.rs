//! The configuration file: MCP servers, evaluation profiles, limits and the audit log.
//!
//! Parsed by [`Config::from_json_str`] / [`Config::load`], which check everything at once and
//! report every problem with its JSON path ([`crate::ConfigErrors`]). See the crate docs for
//! the format. The settings sections and the reading machinery are `codemode_config`'s; it
//! reads the policy sections (`evaluation`, `outputs`) too, into plain typed values (every
//! value checked at its path), which are converted here into this crate's decision types.

mod classification;
mod evaluation;
mod gateway_keys;
mod globs;
mod outputs;
mod sections;

use std::collections::BTreeMap;
use std::sync::Arc;

use codemode_config::{
    ApprovalsConfig, AuditConfig, CommandConfig, ConfigWarning, DurableConfig, Limits,
    LoggingConfig, ServerConfig, ServerSettings,
};

use crate::profile::Profile;

/// A whole configuration. [`Config::default`] is the built-in one: no servers, no profiles,
/// default [`Limits`], no audit log.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Config {
    /// The upstream MCP servers, by name (`mcpServers`, alias `servers`). Default: none.
    pub servers: BTreeMap<String, ServerConfig>,
    /// Profiles and the default profile (`evaluation`). Default: none.
    pub evaluation: EvaluationConfig,
    /// Resource limits of each eval (`limits`). Default: [`Limits::default`].
    pub limits: Limits,
    /// The audit log (`audit`). Default: off.
    pub audit: AuditConfig,
    /// Where approvals can be answered besides the client (`approvals`). Default: the client's
    /// channel only.
    pub approvals: ApprovalsConfig,
    /// How `serve --http` accepts requests (`server`): hosts, origins, auth. Default: loopback
    /// only, no auth.
    pub server: ServerSettings,
    /// Local programs offered to scripts as tools (`commands`), by tool name. Default: none.
    pub commands: BTreeMap<String, CommandConfig>,
    /// What is masked or removed from tool results before scripts see them (`outputs`).
    /// Default: nothing.
    pub outputs: Arc<crate::OutputPolicy>,
    /// Where evals waiting for a human, pending approvals and legacy MCP sessions are kept
    /// (`durable`). Default: [`DurableConfig::default`], a local store in the user's state
    /// directory.
    pub durable: DurableConfig,
    /// How log lines are written (`logging`). Default: text.
    pub logging: LoggingConfig,
    /// Where OpenTelemetry traces go (`telemetry`). Default: nowhere (no spans are made).
    pub telemetry: codemode_config::TelemetryConfig,
    /// What the file says that codemode accepts but ignores (a client-only key such as
    /// `autoApprove`, VS Code `inputs`), for the caller to show. Default: none.
    pub warnings: Vec<ConfigWarning>,
}

impl Config {
    /// The profile called `name`.
    pub fn profile(&self, name: &str) -> Option<&Arc<Profile>> {
        self.evaluation.profiles.get(name)
    }

    /// The profile an eval runs under: the one `requested` by name, else `defaultProfile`, else
    /// none (unrestricted).
    ///
    /// # Errors
    ///
    /// [`UnknownProfile`] when `requested` names no profile.
    pub fn resolve_profile(
        &self,
        requested: Option<&str>,
    ) -> Result<Option<Arc<Profile>>, UnknownProfile> {
        let Some(name) = requested.or(self.evaluation.default_profile.as_deref()) else {
            return Ok(None);
        };
        self.profile(name)
            .cloned()
            .map(Some)
            .ok_or_else(|| UnknownProfile {
                name: name.to_string(),
                available: self.evaluation.profiles.keys().cloned().collect(),
            })
    }
}

/// A profile name that the configuration does not define.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown profile `{name}`; available: {}", if available.is_empty() { "none".to_string() } else { available.join(", ") })]
pub struct UnknownProfile {
    /// The name asked for.
    pub name: String,
    /// The profiles that exist.
    pub available: Vec<String>,
}

/// The `evaluation` section.
#[derive(Debug, Clone, Default)]
pub struct EvaluationConfig {
    /// The profile evals run under when none is requested (`defaultProfile`). Default: none,
    /// i.e. unrestricted.
    pub default_profile: Option<String>,
    /// The profiles, by name (`profiles`). Default: none.
    pub profiles: BTreeMap<String, Arc<Profile>>,
    /// The permissions a caller needs to use the base `eval` tool
    /// (`evalRequiresPermissions`, free strings). Default: none. See
    /// [`EvaluationConfig::eval_missing_permissions`].
    pub eval_requires_permissions: Vec<String>,
    /// The tools' classes (`classification`) and whether the local caller may make
    /// destructive calls (`localAllowDestructive`). Default: classes from the upstreams'
    /// annotations, and it may.
    pub classification: Arc<crate::Classification>,
}

impl EvaluationConfig {
    /// The permissions of `evalRequiresPermissions` that `caller` lacks, in written order:
    /// empty when the caller may use the base `eval` tool.
    pub fn eval_missing_permissions<'a>(&'a self, caller: &crate::Caller) -> Vec<&'a str> {
        caller.missing(&self.eval_requires_permissions)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_policy_keys;
