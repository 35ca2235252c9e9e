//! Why a script cannot be turned into JavaScript: [`ScriptError`].

use std::fmt;

use codemode_runtime::{ErrorKind, EvalError};

/// Why a script cannot be turned into JavaScript: a syntax error, a fence problem, or
/// TypeScript that needs more than stripping. Positions are in the user's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// What is wrong, e.g. "TypeScript `enum` needs more than type stripping: …".
    pub message: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

impl ScriptError {
    pub(super) fn at(line: u32, column: u32, message: impl Into<String>) -> Self {
        ScriptError {
            message: message.into(),
            line,
            column,
        }
    }

    /// The error as an eval's `syntax` error, the shape the sandbox gives a syntax error:
    /// `{"kind": "syntax", "message": "SyntaxError: …", "line", "column"}`.
    pub fn to_eval_error(&self) -> EvalError {
        let mut error = EvalError::new(ErrorKind::Syntax, format!("SyntaxError: {}", self.message));
        error.line = Some(self.line);
        error.column = Some(self.column);
        error
    }
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for ScriptError {}
