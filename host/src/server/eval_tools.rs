//! The eval tools: their names (`eval` for the default profile, `codemode_eval_<profile>` for
//! each profile) and who may call them.

use std::sync::Arc;

use codemode_policies::{Alternative, Caller, Config, Profile};
use rmcp::ErrorData as McpError;

/// Name of the eval tool of `evaluation.defaultProfile` (unrestricted without one).
pub const EVAL_TOOL: &str = "eval";
/// Prefix of the per-profile eval tools: `codemode_eval_<profile>`.
pub(crate) const PROFILE_TOOL_PREFIX: &str = "codemode_eval_";

/// The permissions of `required` that `caller` lacks for eval tool `tool` (`eval` or
/// `codemode_eval_<profile>`): the profile's `requirePermissions`, and for `eval` also
/// `evaluation.evalRequiresPermissions`. Empty for an unknown tool (the call reports that).
pub(super) fn missing_permissions(config: &Config, tool: &str, caller: &Caller) -> Vec<String> {
    caller
        .missing(&required_permissions(config, tool))
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// The permissions eval tool `tool` requires (see [`missing_permissions`]); none for an unknown
/// tool.
pub(super) fn required_permissions(config: &Config, tool: &str) -> Vec<String> {
    let mut required: Vec<String> = Vec::new();
    let profile = if tool == EVAL_TOOL {
        required.extend(eval_requires_permissions(config).iter().cloned());
        config.evaluation.default_profile.as_deref()
    } else {
        tool.strip_prefix(PROFILE_TOOL_PREFIX)
    };
    if let Some(profile) = profile.and_then(|name| config.profile(name)) {
        required.extend(profile_requires_permissions(profile).iter().cloned());
    }
    required.sort();
    required.dedup();
    required
}

/// `evaluation.evalRequiresPermissions`.
fn eval_requires_permissions(config: &Config) -> &[String] {
    &config.evaluation.eval_requires_permissions
}

/// A profile's `requirePermissions`.
fn profile_requires_permissions(profile: &Profile) -> &[String] {
    profile.required_permissions()
}

/// The error of a call to a tool this server does not have — or one the caller may not see.
pub(super) fn unknown_tool(name: &str) -> McpError {
    McpError::invalid_params(format!("unknown tool `{name}`"), None)
}

/// The profile eval tool `tool` stands for, when `caller` may use it (`None`: `eval` without a
/// default profile, unrestricted).
///
/// # Errors
/// [`unknown_tool`] when the tool does not exist *or* the caller lacks a permission it
/// requires: the same answer, so that neither a hidden profile nor what it requires can be
/// learnt by calling it (the tool list leaves such tools out too).
pub(super) fn usable_profile(
    config: &Config,
    tool: &str,
    caller: &Caller,
) -> Result<Option<Arc<Profile>>, McpError> {
    let profile = if tool == EVAL_TOOL {
        match &config.evaluation.default_profile {
            Some(name) => Some(config.profile(name).ok_or_else(|| unknown_tool(tool))?),
            None => None,
        }
    } else {
        let name = tool.strip_prefix(PROFILE_TOOL_PREFIX).unwrap_or_default();
        Some(config.profile(name).ok_or_else(|| unknown_tool(tool))?)
    };
    if !missing_permissions(config, tool, caller).is_empty() {
        return Err(unknown_tool(tool));
    }
    Ok(profile.cloned())
}

/// The eval tools `caller` may use, as `tools/list` shows them: `eval`, then one
/// `codemode_eval_<profile>` per profile (the default profile's only when `eval` is hidden).
pub(super) fn usable_eval_tools(config: &Config, caller: &Caller) -> Vec<Alternative> {
    let default = config.evaluation.default_profile.as_deref();
    let mut tools = Vec::new();
    let eval_usable = missing_permissions(config, EVAL_TOOL, caller).is_empty();
    if eval_usable {
        tools.push(Alternative {
            tool: EVAL_TOOL.to_string(),
            profile: default.and_then(|name| config.profile(name)).cloned(),
        });
    }
    for (name, profile) in &config.evaluation.profiles {
        let tool = format!("{PROFILE_TOOL_PREFIX}{name}");
        if !missing_permissions(config, &tool, caller).is_empty()
            || (eval_usable && default == Some(name.as_str()))
        {
            continue;
        }
        tools.push(Alternative {
            tool,
            profile: Some(profile.clone()),
        });
    }
    tools
}

/// The eval tools `caller` may use that run under another profile than `profile` (`None`:
/// unrestricted): where a denied call's error points to.
pub(super) fn alternatives(
    config: &Config,
    profile: Option<&str>,
    caller: &Caller,
) -> Vec<Alternative> {
    usable_eval_tools(config, caller)
        .into_iter()
        .filter(|alt| alt.profile.as_ref().map(|p| p.name()) != profile)
        .collect()
}
