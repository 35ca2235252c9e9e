//! The log lines on stderr: text for people, or JSON for a log pipeline (`--log-format json`,
//! `logging.format: "json"`): one object per line with `ts` (RFC 3339 UTC), `level`, `target`,
//! `message`, the event's other fields, and `eval_id` / `caller` when the event happened in an
//! eval. Every string is neutralised as the text lines are (control, format and invisible
//! characters made visible), so a caller's name or an upstream's error cannot forge a line.

use std::fmt;

use codemode_config::LogFormat;
use codemode_policies::AuditRecord;
use codemode_policies::neutralize;
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// Starts logging to stderr in `format`; `RUST_LOG` filters. Text lines are coloured only
/// when stderr is a terminal and `NO_COLOR` is unset or empty (no-color.org), so a log file or
/// a client's log pane gets no escape sequences.
pub fn init(format: LogFormat) {
    // rustls's certificate verifier logs a refused certificate as an error of its own; the
    // command's message already names it (`invalid peer certificate: …`), once.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("warn,rustls_platform_verifier=off")
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.with_ansi(super::common::stderr_colour()).try_init(),
        LogFormat::Json => builder
            .with_ansi(false)
            .fmt_fields(JsonFields)
            .event_format(JsonLines)
            .try_init(),
    };
}

/// A span's or an event's fields as a JSON object, every string neutralised.
#[derive(Default)]
struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .insert(field.name().to_string(), Value::String(neutralize(value)));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.record_str(field, &format!("{value:?}"));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.record_str(field, &value.to_string());
    }
}

/// Span fields kept as JSON text (what [`JsonLines`] reads back for `eval_id` and `caller`).
struct JsonFields;

impl<'writer> FormatFields<'writer> for JsonFields {
    fn format_fields<R: tracing_subscriber::field::RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        let mut visitor = Fields::default();
        fields.record(&mut visitor);
        write!(writer, "{}", Value::Object(visitor.0))
    }

    fn add_fields(
        &self,
        current: &'writer mut FormattedFields<Self>,
        fields: &tracing::span::Record<'_>,
    ) -> fmt::Result {
        let mut object: Map<String, Value> =
            serde_json::from_str(&current.fields).unwrap_or_default();
        let mut visitor = Fields::default();
        fields.record(&mut visitor);
        object.extend(visitor.0);
        current.fields = Value::Object(object).to_string();
        Ok(())
    }
}

/// One JSON object per event (see the module docs).
struct JsonLines;

/// The span fields an event line carries when one of its spans has them.
const SPAN_FIELDS: [&str; 2] = ["eval_id", "caller"];

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let meta = event.metadata();
        let mut line = Map::new();
        line.insert("ts".into(), Value::String(AuditRecord::now_rfc3339()));
        line.insert(
            "level".into(),
            Value::String(meta.level().as_str().to_ascii_lowercase()),
        );
        line.insert("target".into(), Value::String(neutralize(meta.target())));
        let message = fields.0.remove("message").unwrap_or_default();
        line.insert("message".into(), message);
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let extensions = span.extensions();
                let Some(formatted) = extensions.get::<FormattedFields<N>>() else {
                    continue;
                };
                let Ok(Value::Object(span_fields)) = serde_json::from_str(&formatted.fields) else {
                    continue;
                };
                for (key, value) in span_fields {
                    if SPAN_FIELDS.contains(&key.as_str()) {
                        line.insert(key, value);
                    }
                }
            }
        }
        for (key, value) in fields.0 {
            line.entry(key).or_insert(value);
        }
        writeln!(writer, "{}", Value::Object(line))
    }
}
