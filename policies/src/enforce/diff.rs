//! The diff an approval prompt shows of a write (a profile's `approvalDiffs`): the file's
//! current content, read through the same upstream, against the content the call would write.

use std::time::Duration;

use codemode_runtime::CallContext;
use serde_json::{Value, json};

use super::PolicyToolHost;
use crate::{DispositionKind, Profile, bounded, change_summary};

/// How long reading the current content may take before the prompt goes without a diff.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

impl PolicyToolHost {
    /// What the prompt of `tool`'s call adds below its arguments when the profile's
    /// `approvalDiffs` names it: the change as [`change_summary`] shows it, or one line saying
    /// why there is no diff. `None` when the profile names no diff for the tool, or the call's
    /// path or content argument is not a string (the arguments alone are shown).
    ///
    /// The read is made only when the profile would let the call's caller read that path
    /// (its disposition for the read tool is not `deny`, and the caller holds the permissions
    /// its deciding rule requires: an `ask` is not asked, the read being
    /// for the human's eyes only), goes to the inner host directly (it is not the script's call:
    /// not in the ledger, not audited), and its result is masked by the `outputs` rules of the
    /// read tool, as a script would receive it.
    pub(super) async fn change_of(
        &self,
        profile: &Profile,
        tool: &str,
        args: &Value,
        cx: &CallContext,
    ) -> Option<String> {
        let spec = profile.approval_diff(tool)?;
        let path = args.get(&spec.path)?.as_str()?;
        let new = args.get(&spec.content)?.as_str()?;
        let read_args = json!({ spec.path.as_str(): path });
        let read = profile.disposition(&spec.read, &read_args);
        if read.kind == DispositionKind::Deny
            || !self.caller.missing(&read.required_permissions).is_empty()
        {
            return Some(format!(
                "No diff: the profile does not let this caller read the file with `{}`.\n",
                spec.read
            ));
        }
        let read = tokio::time::timeout(READ_TIMEOUT, self.inner.call(&spec.read, read_args, cx));
        let mut current = match read.await {
            Ok(Ok(value)) => value,
            Ok(Err(e)) => {
                return Some(format!(
                    "No diff: reading the current content failed (a new file?): {}\n",
                    bounded(&e.to_string(), 200)
                ));
            }
            Err(_) => {
                return Some(format!(
                    "No diff: reading the current content took over {} s.\n",
                    READ_TIMEOUT.as_secs()
                ));
            }
        };
        self.outputs.apply(&spec.read, &mut current);
        match text_of(&current) {
            Some(current) => Some(change_summary(current, new)),
            None => Some(format!(
                "No diff: `{}` did not return the content as text.\n",
                spec.read
            )),
        }
    }
}

/// A read tool's result as text: a string, or an object's `content` string (the filesystem
/// server's `read_text_file`).
fn text_of(value: &Value) -> Option<&str> {
    value
        .as_str()
        .or_else(|| value.get("content").and_then(Value::as_str))
}
