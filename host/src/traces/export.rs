//! Sending spans: a bounded queue the evals put finished spans in without waiting, and one
//! task that POSTs them in batches. A full queue drops the span (counted, and said in the log
//! now and then); a collector that fails or cannot be reached costs a log line, never an
//! eval's time or an error to a client.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::otlp::{SpanRecord, export_request};

/// Spans waiting to be sent at most: about 1 MB, a few seconds of a busy server's spans.
const QUEUE: usize = 4096;
/// Spans in one request at most.
const MAX_BATCH: usize = 512;
/// How long the first span of a batch waits for others (fewer, larger requests).
const BATCH_DELAY: Duration = Duration::from_millis(200);
/// How long a collector may take to answer one request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// The least time between two log lines about failed exports or dropped spans.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// The queue's sending end; the task ends, after sending what is queued, when this is dropped.
pub(crate) struct Exporter {
    queue: mpsc::Sender<SpanRecord>,
    dropped: Arc<AtomicU64>,
}

impl Exporter {
    /// Starts the task sending to `endpoint`. `None` (with a log line) when there is no
    /// runtime to run it on or no HTTP client could be made: traces stay off.
    pub(super) fn start(endpoint: &str) -> Option<Arc<Exporter>> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        codemode_upstream::crypto::install();
        let client = match reqwest::Client::builder().timeout(REQUEST_TIMEOUT).build() {
            Ok(client) => client,
            Err(e) => {
                tracing::warn!("traces are off: no HTTP client for the OTLP exporter: {e}");
                return None;
            }
        };
        let (queue, spans) = mpsc::channel(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let sender = Sender {
            client,
            endpoint: endpoint.to_string(),
            shown: shown(endpoint),
            dropped: dropped.clone(),
            failed: 0,
            last_log: None,
        };
        drop(runtime.spawn(sender.run(spans)));
        Some(Arc::new(Exporter { queue, dropped }))
    }

    /// Queues `span`, or drops it (counted) when the queue is full: never waits.
    pub(super) fn send(&self, span: SpanRecord) {
        if self.queue.try_send(span).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The task's side.
struct Sender {
    client: reqwest::Client,
    endpoint: String,
    /// The endpoint as the log names it.
    shown: String,
    dropped: Arc<AtomicU64>,
    /// Spans lost to failed requests since the last log line.
    failed: u64,
    last_log: Option<Instant>,
}

impl Sender {
    async fn run(mut self, mut spans: mpsc::Receiver<SpanRecord>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        while spans.recv_many(&mut batch, MAX_BATCH).await > 0 {
            let deadline = tokio::time::Instant::now() + BATCH_DELAY;
            while batch.len() < MAX_BATCH {
                let left = MAX_BATCH - batch.len();
                match tokio::time::timeout_at(deadline, spans.recv_many(&mut batch, left)).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            self.post(&batch).await;
            batch.clear();
        }
    }

    async fn post(&mut self, batch: &[SpanRecord]) {
        let body = export_request(batch);
        let sent = self
            .client
            .post(&self.endpoint)
            .header(http::header::CONTENT_TYPE, "application/x-protobuf")
            .body(body)
            .send()
            .await;
        let problem = match sent {
            Ok(response) if response.status().is_success() => None,
            Ok(response) => Some(format!("the collector answered {}", response.status())),
            Err(e) => Some(format!("the collector could not be reached: {e}")),
        };
        if problem.is_some() {
            self.failed += batch.len() as u64;
        }
        self.log(problem);
    }

    /// Says what was lost, at most once per [`LOG_EVERY`].
    fn log(&mut self, problem: Option<String>) {
        let due = self.last_log.is_none_or(|at| at.elapsed() >= LOG_EVERY);
        let dropped = self.dropped.load(Ordering::Relaxed);
        if !due || (self.failed == 0 && dropped == 0) {
            return;
        }
        self.dropped.fetch_sub(dropped, Ordering::Relaxed);
        let why = problem.unwrap_or_else(|| "the last request went through".into());
        tracing::warn!(
            "traces: {} spans not exported to {} ({why}), {dropped} dropped with the queue full",
            self.failed,
            self.shown,
        );
        self.failed = 0;
        self.last_log = Some(Instant::now());
    }
}

/// `endpoint`'s scheme, host and port: its path or query may hold a collector's key.
fn shown(endpoint: &str) -> String {
    match reqwest::Url::parse(endpoint) {
        Ok(url) => codemode_policies::neutralize(&format!(
            "{}://{}{}",
            url.scheme(),
            url.host_str().unwrap_or(""),
            url.port().map(|p| format!(":{p}")).unwrap_or_default()
        )),
        Err(_) => "the collector".into(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::{Exporter, QUEUE};
    use crate::traces::otlp::SpanRecord;

    /// Sending never waits: with the task not yet run (one thread, busy sending), what does
    /// not fit the queue is dropped and counted; a collector nobody listens on costs the
    /// task a log line, and the exporter goes on taking spans.
    #[tokio::test]
    async fn a_full_queue_drops_and_counts_and_an_unreachable_collector_is_no_error() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let exporter = Exporter::start(&format!("http://127.0.0.1:{port}/v1/traces")).unwrap();
        for _ in 0..QUEUE + 100 {
            exporter.send(SpanRecord::sample());
        }
        assert_eq!(exporter.dropped.load(Ordering::Relaxed), 100);
        // The task posts (and fails) while this waits for queue room to come back.
        let started = std::time::Instant::now();
        while exporter.queue.capacity() < QUEUE {
            assert!(started.elapsed() < std::time::Duration::from_secs(60));
            tokio::task::yield_now().await;
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        exporter.send(SpanRecord::sample());
    }

    #[test]
    fn the_log_names_the_collector_without_its_path_or_query() {
        assert_eq!(
            super::shown("https://user:key@otel.example:4318/v1/traces?key=s3cret"),
            "https://otel.example:4318"
        );
        assert_eq!(super::shown("not a url"), "the collector");
    }
}
