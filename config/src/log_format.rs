//! `logging.format`'s values, below both the file's types (which read it by name) and the
//! `logging` section.

use serde_json::Value;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// `"text"`: one line for people per event.
    #[default]
    Text,
    /// `"json"`: one JSON object per line (`ts`, `level`, `target`, `message`, and `eval_id` /
    /// `caller` where known), for a log pipeline.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!(
                "expected `text` or `json`, got {}",
                crate::describe(&Value::String(other.to_string()))
            )),
        }
    }
}
