//! The `approvals` section: where humans can answer approval requests besides the MCP client.

use serde_json::Value;

use crate::de;
use crate::reader::{JsonPath, Reader};
use crate::schema::sections;

/// The `approvals` section. Default: only the client's own channel (elicitation, terminal).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApprovalsConfig {
    /// Serve the HTTP approval API and its web page (`/approvals`, `/approvals/ui`) on the
    /// `codemode serve --http` listener, with the same authentication (`http`). Default `false`.
    /// (`codemode serve --approvals-http ADDR` serves them on a listener of their own.)
    pub http: bool,
}

/// Reads `approvals` at `path`.
pub(crate) fn read_approvals(r: &mut Reader, v: &Value, path: &JsonPath) -> ApprovalsConfig {
    let read: Option<sections::Approvals> = de::read(r, v, path);
    ApprovalsConfig {
        http: read.and_then(|a| a.http).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, ConfigErrorKind};

    #[test]
    fn approvals_section() {
        let c = Config::from_json_str(r#"{"approvals": {"http": true}}"#).unwrap();
        assert!(c.approvals.http);
        assert!(!Config::from_json_str("{}").unwrap().approvals.http);
        let cases = [
            (
                r#"{"approvals": {"http": "yes"}}"#,
                "approvals.http",
                ConfigErrorKind::WrongType,
            ),
            (
                r#"{"approvals": {"htp": true}}"#,
                "approvals.htp",
                ConfigErrorKind::UnknownKey,
            ),
            (
                r#"{"approvals": []}"#,
                "approvals",
                ConfigErrorKind::WrongType,
            ),
        ];
        for (json, path, kind) in cases {
            let errors = Config::from_json_str(json).unwrap_err().errors;
            assert_eq!(errors.len(), 1, "{json}: {errors:?}");
            assert_eq!((errors[0].path(), errors[0].kind()), (path, kind), "{json}");
        }
    }
}
