//! The `telemetry` section: where OpenTelemetry traces are sent.

use serde_json::Value;

use crate::de;
use crate::error::ConfigErrorKind;
use crate::reader::{JsonPath, Reader};
use crate::schema::sections;

/// The `telemetry` section. Default: no traces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TelemetryConfig {
    /// `otlpEndpoint`: the full URL spans are POSTed to as OTLP/HTTP protobuf, used as it is
    /// (like `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: nothing is appended, so a collector's
    /// default path is written out, e.g. `http://127.0.0.1:4318/v1/traces`). Default: none
    /// (no spans are made).
    pub otlp_endpoint: Option<String>,
}

/// Checks an OTLP endpoint: an absolute `http` or `https` URL with a host.
fn check_endpoint(text: &str) -> Result<(), String> {
    let url = url::Url::parse(text).map_err(|e| {
        format!("expected the collector's full traces URL (e.g. http://127.0.0.1:4318/v1/traces), got a string that is not a URL: {e}")
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "expected an http:// or https:// URL (OTLP over HTTP), got scheme `{}`",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("expected a URL with a host".into());
    }
    Ok(())
}

/// Reads `telemetry` at `path`.
pub(crate) fn read_telemetry(r: &mut Reader, v: &Value, path: &JsonPath) -> TelemetryConfig {
    let read: Option<sections::Telemetry> = de::read(r, v, path);
    let otlp_endpoint = read.and_then(|t| t.otlp_endpoint);
    if let Some(Err(message)) = otlp_endpoint.as_deref().map(check_endpoint) {
        r.error(
            &path.key("otlpEndpoint"),
            ConfigErrorKind::InvalidValue,
            message,
        );
        return TelemetryConfig::default();
    }
    TelemetryConfig { otlp_endpoint }
}

#[cfg(test)]
mod tests {
    use crate::{Config, ConfigErrorKind};

    #[test]
    fn telemetry_section() {
        assert_eq!(
            Config::from_json_str("{}").unwrap().telemetry.otlp_endpoint,
            None
        );
        let on = r#"{"telemetry": {"otlpEndpoint": "http://127.0.0.1:4318/v1/traces"}}"#;
        assert_eq!(
            Config::from_json_str(on)
                .unwrap()
                .telemetry
                .otlp_endpoint
                .as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        let cases = [
            (
                r#"{"telemetry": {"otlpEndpoint": "localhost:4318"}}"#,
                ConfigErrorKind::InvalidValue,
                "expected an http:// or https:// URL (OTLP over HTTP), got scheme `localhost`",
            ),
            (
                r#"{"telemetry": {"otlpEndpoint": "grpc://collector:4317"}}"#,
                ConfigErrorKind::InvalidValue,
                "expected an http:// or https:// URL (OTLP over HTTP), got scheme `grpc`",
            ),
            (
                r#"{"telemetry": {"otlpEndpoint": "not a url"}}"#,
                ConfigErrorKind::InvalidValue,
                "expected the collector's full traces URL (e.g. http://127.0.0.1:4318/v1/traces), got a string that is not a URL: relative URL without a base",
            ),
            (
                r#"{"telemetry": {"otlpEndpoint": 4318}}"#,
                ConfigErrorKind::WrongType,
                "",
            ),
        ];
        for (json, kind, message) in cases {
            let errors = Config::from_json_str(json).unwrap_err().errors;
            assert_eq!(errors.len(), 1, "{json}: {errors:?}");
            let at = (errors[0].path(), errors[0].kind());
            assert_eq!(at, ("telemetry.otlpEndpoint", kind), "{json}");
            if !message.is_empty() {
                assert_eq!(errors[0].message(), message, "{json}");
            }
        }
        let unknown = Config::from_json_str(r#"{"telemetry": {"endpoint": "x"}}"#).unwrap_err();
        assert_eq!(unknown.errors[0].path(), "telemetry.endpoint");
        assert_eq!(unknown.errors[0].kind(), ConfigErrorKind::UnknownKey);
    }
}
