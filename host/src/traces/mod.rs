//! OpenTelemetry traces (`telemetry.otlpEndpoint`): an eval's `eval` span, its `tool_call`
//! spans, the `approval_wait` of a call that asked a human and the `upstream_request` of a
//! call sent to an upstream server, exported over OTLP/HTTP ([`export`]).
//!
//! Spans are made from what the eval already reports: the `tool_call` and `eval` audit
//! records (through [`hooks::TracingSink`], so every path — fresh, denied, cancelled — is
//! covered once), the asker's waits ([`hooks::TracingAsker`]) and the upstream call itself. A
//! `tool_call` span's id is derived from the eval's span and the call's number, so its
//! children can name it before the call has ended. Attributes carry the profile, tool,
//! decision, risk and outcome, never an argument or a result.
//!
//! The eval's parent is the client's W3C `traceparent` (the HTTP request's header, else the
//! MCP request's `_meta.traceparent`); an upstream call carries its span's own `traceparent`
//! on (see `codemode_upstream::CallScope::traceparent`).
//!
//! A parked eval keeps its trace ([`SavedTrace`], in the store with it), and the node that
//! resumes it goes on in it: same trace, same `eval` span. That span is sent once, when the
//! eval ends (it is made from the eval's audit record, whose wall time counts the time parked),
//! so nothing of it was sent at the park, and the resumed part's `tool_call` spans hang from
//! it as they would had the eval stayed in memory: one tree, no span link needed. The request
//! that brought the answer (a retry, the approval API) has its own trace, which the eval does
//! not join.

mod export;
pub(crate) mod hooks;
mod otlp;

use std::sync::{Arc, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use export::Exporter;
pub(crate) use otlp::SpanRecord;

/// A W3C trace context: a trace and the span within it a child hangs from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpanContext {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
}

impl SpanContext {
    /// A `traceparent` value (`00-<trace>-<span>-<flags>`); `None` for anything else, an
    /// all-zero id or version `ff` included (the W3C rules: such a header is ignored).
    pub(crate) fn parse(text: &str) -> Option<SpanContext> {
        let mut parts = text.trim().split('-');
        let version = parts.next().filter(|v| v.len() == 2 && *v != "ff")?;
        let trace_id: [u8; 16] = hex(parts.next()?)?;
        let span_id: [u8; 8] = hex(parts.next()?)?;
        let flags = parts.next().filter(|f| f.len() == 2)?;
        hex::<1>(version)?;
        hex::<1>(flags)?;
        // Version 00 has exactly four fields; a later one may add more.
        if version == "00" && parts.next().is_some() {
            return None;
        }
        let zero = trace_id == [0; 16] || span_id == [0; 8];
        (!zero).then_some(SpanContext { trace_id, span_id })
    }

    /// The `traceparent` value naming this span (sampled).
    pub(crate) fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-01",
            codemode_store::hex(&self.trace_id),
            codemode_store::hex(&self.span_id)
        )
    }
}

fn hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N
        || !digits
            .iter()
            .all(|d| matches!(d, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    let mut out = [0; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

fn random<const N: usize>() -> [u8; N] {
    let mut out = [0; N];
    // The OS's generator failing leaves a fixed id: a span still exported, in a wrong trace.
    if getrandom::fill(&mut out).is_err() || out == [0; N] {
        out[0] = 1;
    }
    out
}

/// Now, in nanoseconds since the Unix epoch.
pub(crate) fn now_ns() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
}

/// Where a server's spans go: the exporter of the config in force, none when traces are off.
#[derive(Default)]
pub(crate) struct Traces(RwLock<Option<(String, Arc<Exporter>)>>);

impl Traces {
    /// Exports to `endpoint` from now on (`None`: traces off). An exporter whose endpoint is
    /// unchanged is kept; a replaced one sends what it holds, then stops.
    pub(crate) fn configure(&self, endpoint: Option<&str>) {
        let mut current = self.0.write().unwrap_or_else(|e| e.into_inner());
        if current.as_ref().map(|(e, _)| e.as_str()) == endpoint {
            return;
        }
        *current = endpoint.and_then(|e| Some((e.to_string(), Exporter::start(e)?)));
    }

    /// A new eval's trace, under `parent` when the client sent one, its spans saying `profile`
    /// (none: `none`, as the metrics say); `None` when traces are off.
    pub(crate) fn eval(
        &self,
        parent: Option<SpanContext>,
        profile: Option<&str>,
    ) -> Option<EvalTrace> {
        let current = self.0.read().unwrap_or_else(|e| e.into_inner());
        let (_, exporter) = current.as_ref()?;
        Some(EvalTrace::new(
            exporter.clone(),
            parent,
            profile.unwrap_or("none"),
        ))
    }

    /// The trace of a parked eval resumed here: the one it `saved` (see the module docs); a
    /// new one when it kept none (traces were off where it started) or its ids do not parse;
    /// `None` when traces are off here.
    pub(crate) fn resumed(
        &self,
        saved: Option<&SavedTrace>,
        profile: Option<&str>,
    ) -> Option<EvalTrace> {
        let ids = saved.and_then(|saved| {
            let parent = match &saved.parent {
                Some(parent) => Some(hex::<8>(parent)?),
                None => None,
            };
            Some((
                hex::<16>(&saved.trace_id)?,
                hex::<8>(&saved.eval_span)?,
                parent,
            ))
        });
        let Some((trace_id, eval_span, parent)) = ids else {
            return self.eval(None, profile);
        };
        let current = self.0.read().unwrap_or_else(|e| e.into_inner());
        let (_, exporter) = current.as_ref()?;
        Some(EvalTrace(Arc::new(EvalTraceInner {
            exporter: exporter.clone(),
            trace_id,
            eval_span,
            parent,
            profile: profile.unwrap_or("none").to_string(),
        })))
    }
}

/// An eval's trace as a parked eval keeps it in the store: hex ids.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct SavedTrace {
    /// The trace.
    pub trace_id: String,
    /// The eval's own span.
    pub eval_span: String,
    /// The span the eval hangs from (the client's), when there is one.
    pub parent: Option<String>,
}

/// One eval's trace: where its spans go and the ids they hang from. Cheap to clone.
#[derive(Clone)]
pub(crate) struct EvalTrace(Arc<EvalTraceInner>);

struct EvalTraceInner {
    exporter: Arc<Exporter>,
    trace_id: [u8; 16],
    eval_span: [u8; 8],
    parent: Option<[u8; 8]>,
    profile: String,
}

impl EvalTrace {
    fn new(exporter: Arc<Exporter>, parent: Option<SpanContext>, profile: &str) -> EvalTrace {
        EvalTrace(Arc::new(EvalTraceInner {
            exporter,
            trace_id: parent.map_or_else(random, |p| p.trace_id),
            eval_span: random(),
            parent: parent.map(|p| p.span_id),
            profile: profile.to_string(),
        }))
    }

    /// What a parked eval keeps of its trace, for [`Traces::resumed`].
    pub(crate) fn saved(&self) -> SavedTrace {
        SavedTrace {
            trace_id: codemode_store::hex(&self.0.trace_id),
            eval_span: codemode_store::hex(&self.0.eval_span),
            parent: self.0.parent.as_ref().map(|p| codemode_store::hex(p)),
        }
    }

    /// The id of the `tool_call` span of the eval's call number `call_id`.
    pub(crate) fn call_span(&self, call_id: u64) -> [u8; 8] {
        let mut hash = Sha256::new();
        hash.update(self.0.eval_span);
        hash.update(call_id.to_le_bytes());
        let digest = hash.finalize();
        let mut id = [0; 8];
        id.copy_from_slice(&digest[..8]);
        id
    }

    /// An `upstream_request` span of call `call_id` starting now.
    pub(crate) fn upstream_request(&self, call_id: u64) -> UpstreamSpan {
        UpstreamSpan {
            trace: self.clone(),
            span_id: random(),
            parent: self.call_span(call_id),
            start_ns: now_ns(),
        }
    }

    /// Sends a span of this trace: `name` with `span_id` under `parent` (`None`: the eval's
    /// own parent), `codemode.profile` and `attributes` added.
    pub(crate) fn record(
        &self,
        (name, span_id, parent): (&'static str, [u8; 8], Option<[u8; 8]>),
        (start_ns, end_ns): (u64, u64),
        mut attributes: Vec<(&'static str, String)>,
        error: bool,
    ) {
        attributes.insert(0, ("codemode.profile", self.0.profile.clone()));
        self.0.exporter.send(SpanRecord {
            trace_id: self.0.trace_id,
            span_id,
            parent,
            name,
            start_ns,
            end_ns,
            attributes,
            error,
        });
    }

    fn eval_span(&self) -> [u8; 8] {
        self.0.eval_span
    }

    fn eval_parent(&self) -> Option<[u8; 8]> {
        self.0.parent
    }
}

/// An upstream call in flight: its span is sent when [`end`](Self::end) is called.
pub(crate) struct UpstreamSpan {
    trace: EvalTrace,
    span_id: [u8; 8],
    parent: [u8; 8],
    start_ns: u64,
}

impl UpstreamSpan {
    /// The `traceparent` the upstream request carries.
    pub(crate) fn traceparent(&self) -> String {
        let context = SpanContext {
            trace_id: self.trace.0.trace_id,
            span_id: self.span_id,
        };
        context.traceparent()
    }

    /// The call to `tool` has ended, `ok` or not.
    pub(crate) fn end(self, tool: &str, ok: bool) {
        let outcome = if ok { "ok" } else { "error" };
        self.trace.record(
            ("upstream_request", self.span_id, Some(self.parent)),
            (self.start_ns, now_ns()),
            vec![
                ("codemode.tool", tool.to_string()),
                ("codemode.outcome", outcome.to_string()),
            ],
            !ok,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::SpanContext;

    #[test]
    fn traceparent_parsing_follows_the_w3c_rules() {
        let good = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let context = SpanContext::parse(good).unwrap();
        assert_eq!(
            context.span_id,
            [0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31]
        );
        assert_eq!(context.traceparent(), good);
        let bad = [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-0af7651916cd43dd8448eb211c8031-b7ad6b7169203331-01",
        ];
        for text in bad {
            assert_eq!(SpanContext::parse(text), None, "{text}");
        }
        // A later version may carry more fields.
        let later = "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what";
        assert!(SpanContext::parse(later).is_some());
    }
}
