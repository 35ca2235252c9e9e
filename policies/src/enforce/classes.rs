//! The classification step of a call: a destructive tool needs the caller's
//! `allow_destructive`, whatever the profile says.

use codemode_runtime::ToolError;

use super::{PolicyToolHost, denied};
use crate::{ALLOW_DESTRUCTIVE, Class};

impl PolicyToolHost {
    /// `tool`'s class: the config's globs, else its annotations (through the schemas' tool
    /// list), else write.
    pub(super) fn class_of(&self, tool: &str) -> Class {
        let annotated = self
            .schemas
            .as_ref()
            .and_then(|s| s.schemas().annotated_class(tool));
        self.classes.class_of(tool, annotated)
    }

    /// The refusal of a destructive call by a caller without `allow_destructive`: reason
    /// `permission`, like a rule's missing permission. No other eval tool is suggested: the
    /// class is the tool's, under every profile.
    pub(super) fn destructive_denial(&self, tool: &str) -> ToolError {
        denied(
            tool,
            "permission",
            format!(
                "`{tool}` is destructive and needs the permission `{ALLOW_DESTRUCTIVE}`, which caller `{}` lacks",
                self.caller.name
            ),
        )
    }
}
