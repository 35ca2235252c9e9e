//! The OTLP/HTTP request body: an `ExportTraceServiceRequest` (opentelemetry-proto
//! `collector/trace/v1`) in protobuf, written by hand. codemode sends one message shape with
//! a handful of fields, so a few wire-format helpers stand in for prost and generated code.

/// One finished span, as exported.
#[derive(Debug, Clone)]
pub(crate) struct SpanRecord {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
    pub(crate) parent: Option<[u8; 8]>,
    pub(crate) name: &'static str,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) attributes: Vec<(&'static str, String)>,
    /// Whether the span's status is `ERROR`.
    pub(crate) error: bool,
}

#[cfg(test)]
impl SpanRecord {
    /// A root `eval` span of trace `[1; 16]`, id `[2; 8]`, from 5 ns to 6 ns, no attributes.
    pub(crate) fn sample() -> SpanRecord {
        SpanRecord {
            trace_id: [1; 16],
            span_id: [2; 8],
            parent: None,
            name: "eval",
            start_ns: 5,
            end_ns: 6,
            attributes: Vec::new(),
            error: false,
        }
    }
}

/// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;

/// `Span.SpanKind`: `SPAN_KIND_INTERNAL`.
const KIND_INTERNAL: u64 = 1;
/// `Status.StatusCode`: `STATUS_CODE_ERROR` (the others are left unset).
const STATUS_ERROR: u64 = 2;

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, u64::from(field << 3 | u32::from(wire)));
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn bytes(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    key(out, field, LEN);
    varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

/// A length-delimited field whose content `write` makes.
fn message(out: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    write(&mut inner);
    bytes(out, field, &inner);
}

/// `KeyValue { key = 1; AnyValue value = 2 { string_value = 1 } }`.
fn attribute(out: &mut Vec<u8>, field: u32, name: &str, value: &str) {
    message(out, field, |kv| {
        bytes(kv, 1, name.as_bytes());
        message(kv, 2, |any| bytes(any, 1, value.as_bytes()));
    });
}

fn span(out: &mut Vec<u8>, span: &SpanRecord) {
    bytes(out, 1, &span.trace_id);
    bytes(out, 2, &span.span_id);
    if let Some(parent) = &span.parent {
        bytes(out, 4, parent);
    }
    bytes(out, 5, span.name.as_bytes());
    key(out, 6, VARINT);
    varint(out, KIND_INTERNAL);
    key(out, 7, FIXED64);
    out.extend_from_slice(&span.start_ns.to_le_bytes());
    key(out, 8, FIXED64);
    out.extend_from_slice(&span.end_ns.to_le_bytes());
    for (name, value) in &span.attributes {
        attribute(out, 9, name, value);
    }
    if span.error {
        message(out, 15, |status| {
            key(status, 3, VARINT);
            varint(status, STATUS_ERROR);
        });
    }
}

/// `ExportTraceServiceRequest { ResourceSpans { Resource { service.name }, ScopeSpans {
/// InstrumentationScope { codemode, version }, spans } } }`.
pub(super) fn export_request(spans: &[SpanRecord]) -> Vec<u8> {
    let mut out = Vec::new();
    message(&mut out, 1, |resource_spans| {
        message(resource_spans, 1, |resource| {
            attribute(resource, 1, "service.name", "codemode");
        });
        message(resource_spans, 2, |scope_spans| {
            message(scope_spans, 1, |scope| {
                bytes(scope, 1, b"codemode");
                bytes(scope, 2, env!("CARGO_PKG_VERSION").as_bytes());
            });
            for record in spans {
                message(scope_spans, 2, |out| span(out, record));
            }
        });
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_little_endian_base_128() {
        let cases: [(u64, &[u8]); 4] = [
            (0, &[0]),
            (1, &[1]),
            (300, &[0xac, 0x02]),
            (
                u64::MAX,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ];
        for (value, expected) in cases {
            let mut out = Vec::new();
            varint(&mut out, value);
            assert_eq!(out, expected, "{value}");
        }
    }

    #[test]
    fn a_span_is_its_fields_in_order() {
        let record = SpanRecord {
            attributes: vec![("k", "v".into())],
            ..SpanRecord::sample()
        };
        let mut out = Vec::new();
        span(&mut out, &record);
        let mut expected = vec![0x0a, 16];
        expected.extend([1; 16]);
        expected.extend([0x12, 8]);
        expected.extend([2; 8]);
        expected.extend([0x2a, 4]);
        expected.extend(b"eval");
        expected.extend([
            0x30, 1, 0x39, 5, 0, 0, 0, 0, 0, 0, 0, 0x41, 6, 0, 0, 0, 0, 0, 0, 0,
        ]);
        expected.extend([0x4a, 8, 0x0a, 1, b'k', 0x12, 3, 0x0a, 1, b'v']);
        assert_eq!(out, expected);
    }
}
