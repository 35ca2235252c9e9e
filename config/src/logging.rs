//! The `logging` section: how log lines are written on stderr.

use serde_json::Value;

use crate::de;
use crate::log_format::LogFormat;
use crate::reader::{JsonPath, Reader};
use crate::schema::sections;

/// The `logging` section. Default: text lines for people.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoggingConfig {
    /// `format`. Default: [`LogFormat::Text`].
    pub format: LogFormat,
}

/// Reads `logging` at `path`.
pub(crate) fn read_logging(r: &mut Reader, v: &Value, path: &JsonPath) -> LoggingConfig {
    let read: Option<sections::Logging> = de::read(r, v, path);
    LoggingConfig {
        format: read
            .and_then(|l| l.format)
            .map_or_else(LogFormat::default, |f| f.0),
    }
}

#[cfg(test)]
mod tests {
    use super::LogFormat;
    use crate::{Config, ConfigErrorKind};

    #[test]
    fn logging_section() {
        let text = Config::from_json_str("{}").unwrap();
        assert_eq!(text.logging.format, LogFormat::Text);
        let json = Config::from_json_str(r#"{"logging": {"format": "json"}}"#).unwrap();
        assert_eq!(json.logging.format, LogFormat::Json);
        let cases = [
            (
                r#"{"logging": {"format": "xml"}}"#,
                "logging.format",
                ConfigErrorKind::InvalidValue,
                "expected `text` or `json`, got a string (\"xml\")",
            ),
            (
                r#"{"logging": {"format": 1}}"#,
                "logging.format",
                ConfigErrorKind::WrongType,
                "",
            ),
            (
                r#"{"logging": {"level": "info"}}"#,
                "logging.level",
                ConfigErrorKind::UnknownKey,
                "",
            ),
        ];
        for (json, path, kind, message) in cases {
            let errors = Config::from_json_str(json).unwrap_err().errors;
            assert_eq!(errors.len(), 1, "{json}: {errors:?}");
            assert_eq!((errors[0].path(), errors[0].kind()), (path, kind), "{json}");
            if !message.is_empty() {
                assert_eq!(errors[0].message(), message, "{json}");
            }
        }
    }
}
