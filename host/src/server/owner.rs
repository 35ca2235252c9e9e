//! Whose an eval is: the eval tool it was called through and the caller who started it. Only
//! they may answer it, take it from the store or fetch its result with its `requestState`
//! (which is no credential). The same [`Owner::admits`] decides for the eval's in-memory entry
//! ([`super::suspend::Suspended`]), its `owner:` record in the durable store (which stands for
//! it while it is parked, running after a resume, or finished with its result kept) and its kept
//! result.

use serde::{Deserialize, Serialize};

/// Whose an eval is (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// The eval tool called (`eval` or `codemode_eval_<profile>`): a retry must name the same.
    pub tool: String,
    /// Who started the eval.
    pub caller: String,
}

/// Why a request naming an eval's `requestState` is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotOwner {
    /// The request calls another eval tool than the eval's.
    #[error("requestState belongs to another tool")]
    OtherTool,
    /// The request comes from another caller than the eval's.
    #[error("requestState belongs to another caller")]
    OtherCaller,
}

impl Owner {
    /// The owner of an eval `caller` started through `tool`.
    pub fn new(tool: impl Into<String>, caller: impl Into<String>) -> Self {
        Owner {
            tool: tool.into(),
            caller: caller.into(),
        }
    }

    /// Whether a request through `tool` by `caller` may answer this eval, take it or fetch its
    /// result.
    ///
    /// # Errors
    ///
    /// [`NotOwner`]: the tool is checked first, as a retry through another tool is the
    /// likelier mistake.
    pub fn admits(&self, tool: &str, caller: &str) -> Result<(), NotOwner> {
        if self.tool != tool {
            return Err(NotOwner::OtherTool);
        }
        if self.caller != caller {
            return Err(NotOwner::OtherCaller);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_tool_and_caller_are_admitted() {
        let owner = Owner::new("eval", "alice");
        assert_eq!(owner.admits("eval", "alice"), Ok(()));
        assert_eq!(owner.admits("eval", "bob"), Err(NotOwner::OtherCaller));
        assert_eq!(
            owner.admits("codemode_eval_ro", "alice"),
            Err(NotOwner::OtherTool)
        );
        assert_eq!(
            owner.admits("codemode_eval_ro", "bob"),
            Err(NotOwner::OtherTool)
        );
        // Exact comparison: no normalisation of case or whitespace.
        assert_eq!(owner.admits("eval", "Alice"), Err(NotOwner::OtherCaller));
        assert_eq!(owner.admits("eval ", "alice"), Err(NotOwner::OtherTool));
        assert_eq!(
            (
                NotOwner::OtherTool.to_string(),
                NotOwner::OtherCaller.to_string()
            ),
            (
                "requestState belongs to another tool".to_string(),
                "requestState belongs to another caller".to_string()
            )
        );
        // As stored in an `owner:` record.
        assert_eq!(
            serde_json::to_value(&owner).unwrap(),
            serde_json::json!({"tool": "eval", "caller": "alice"})
        );
    }
}
