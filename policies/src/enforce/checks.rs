//! The schema and output-policy steps of a call: its arguments checked before anyone is asked,
//! its result checked and masked before the script sees it.

use codemode_runtime::{CallContext, ToolError};
use serde_json::Value;

use super::PolicyToolHost;
use super::audit_guard::AuditGuard;
use crate::audit::args_sha256;

/// The error of a result that breaks its tool's `outputSchema` under `strictSchema`: its
/// message's prefix and its data's `kind`.
const INVALID_OUTPUT: &str = "invalid_output";

impl PolicyToolHost {
    /// Checks `args` against `tool`'s `inputSchema`; on failure the audit reason is set
    /// (`invalid_arguments: …`, the given values left out unless arguments are audited).
    pub(super) fn check_arguments(
        &self,
        tool: &str,
        args: &Value,
        audit: &mut AuditGuard<'_>,
    ) -> Result<(), ToolError> {
        let Some(source) = &self.schemas else {
            return Ok(());
        };
        source
            .schemas()
            .check_arguments(tool, args)
            .map_err(|invalid| {
                audit.reason = Some(if self.include_args {
                    invalid.summary()
                } else {
                    invalid.masked_summary()
                });
                invalid.to_tool_error()
            })
    }

    /// What the script gets of a result: warned about when it does not match the tool's
    /// `outputSchema` (naming no value, and no path the output policy masks or removes) — or,
    /// under an `outputs` rule with `strictSchema`, nothing: the call fails with
    /// `invalid_output` and the same words — then masked by the output policy. The audit gets
    /// the hash of the result as returned and the paths masked or removed.
    pub(super) fn finish_result(
        &self,
        tool: &str,
        mut value: Value,
        cx: &CallContext,
        audit: &mut AuditGuard<'_>,
    ) -> Result<Value, ToolError> {
        if audit.records() {
            audit.output_sha256 = Some(args_sha256(&value));
            audit.hitl_result(&value);
        }
        if let Some(source) = &self.schemas {
            // The warning must not name what the output policy is about to hide.
            let schemas = source.schemas();
            if schemas.checks_output_of(tool) {
                let hidden = self.outputs.hidden(tool, &value);
                if let Some(warning) = schemas.check_output(tool, &value, &hidden) {
                    if self.outputs.strict_schema(tool) {
                        let message = format!("{INVALID_OUTPUT}: {warning}");
                        audit.reason = Some(message.clone());
                        audit.stage = crate::audit::Stage::Output;
                        return Err(ToolError::Failed {
                            message,
                            data: Some(serde_json::json!({"kind": INVALID_OUTPUT})),
                        });
                    }
                    cx.warn(warning);
                }
            }
        }
        let text = value.is_string();
        audit.redacted_paths = self.outputs.apply(tool, &mut value);
        // Text has no fields an `allow` list could name: it is withheld whole, and the script
        // is told why its result is `null` (the audit lists `""` as removed).
        if text && value.is_null() && self.outputs.allows_only(tool) {
            cx.warn(format!(
                "the result of `{tool}` was withheld: it is text, and the `outputs` rules for the tool allow only JSON fields"
            ));
        }
        if let Some(observer) = &self.observer {
            observer.observe(tool, &value);
        }
        Ok(value)
    }
}
