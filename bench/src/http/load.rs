//! The generator: `clients` tasks, each one MCP client on its own keep-alive connection, calling
//! the `eval` tool one request after another; latencies are kept after the warm-up.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::client::{Client, Protocol};
use crate::Samples;

/// What the generator sends, and for how long.
#[derive(Debug, Clone)]
pub struct Load {
    /// `http://ADDR/mcp`.
    pub url: String,
    /// The tool called (`eval`).
    pub tool: String,
    /// The script of every eval.
    pub code: String,
    /// Concurrent clients, each on its own connection.
    pub clients: usize,
    /// Calls before this are not measured (errors still count).
    pub warmup: Duration,
    /// The measured time after the warm-up.
    pub duration: Duration,
    /// The protocol generation the clients speak.
    pub protocol: Protocol,
    /// Tokio worker threads of the generator.
    pub threads: usize,
}

/// What a load run measured.
#[derive(Debug, Clone)]
pub struct LoadRun {
    /// Calls completed in the measured time.
    pub measured: u64,
    /// Calls per second in the measured time.
    pub evals_per_s: f64,
    /// Latencies of the measured calls, in ms.
    pub latency_ms: Samples,
    /// Failed calls and connections over the whole run, warm-up included.
    pub errors: u64,
    /// The first few errors, in words.
    pub first_errors: Vec<String>,
}

/// Errors kept in words.
const KEPT_ERRORS: usize = 5;

struct Shared {
    stop: AtomicBool,
    measuring: AtomicBool,
    errors: AtomicU64,
    first_errors: std::sync::Mutex<Vec<String>>,
}

impl Shared {
    fn error(&self, error: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut kept = self.first_errors.lock().expect("errors lock");
        if kept.len() < KEPT_ERRORS {
            kept.push(error);
        }
    }
}

/// Runs `load` to the end: every client connects, calls until the measured time is over,
/// finishes its call in flight and closes its connection (a legacy session is deleted).
///
/// # Errors
/// When the generator's runtime cannot be built.
pub fn run(load: &Load) -> Result<LoadRun, crate::BenchError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(load.threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| format!("the generator's runtime: {e}"))?;
    Ok(runtime.block_on(drive(load))?)
}

async fn drive(load: &Load) -> Result<LoadRun, String> {
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        measuring: AtomicBool::new(false),
        errors: AtomicU64::new(0),
        first_errors: std::sync::Mutex::new(Vec::new()),
    });
    let arguments = json!({ "code": load.code });
    let tasks: Vec<_> = (0..load.clients)
        .map(|_| {
            let (shared, load, arguments) = (shared.clone(), load.clone(), arguments.clone());
            tokio::spawn(async move { client_loop(&load, &arguments, &shared).await })
        })
        .collect();
    tokio::time::sleep(load.warmup).await;
    shared.measuring.store(true, Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(load.duration).await;
    shared.measuring.store(false, Ordering::Relaxed);
    let elapsed = started.elapsed();
    shared.stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for task in tasks {
        match task.await {
            Ok(mut l) => latencies.append(&mut l),
            Err(e) => shared.error(format!("a client task failed: {e}")),
        }
    }
    let measured = latencies.len() as u64;
    let first_errors = shared.first_errors.lock().expect("errors lock").clone();
    Ok(LoadRun {
        measured,
        evals_per_s: measured as f64 / elapsed.as_secs_f64(),
        latency_ms: Samples::millis(&latencies),
        errors: shared.errors.load(Ordering::Relaxed),
        first_errors,
    })
}

/// One client: connect, call until stopped (reconnecting after a failure), close. Returns the
/// latencies of the calls that started and ended in the measured time.
async fn client_loop(load: &Load, arguments: &serde_json::Value, shared: &Shared) -> Vec<Duration> {
    let mut latencies = Vec::new();
    let mut client: Option<Client> = None;
    while !shared.stop.load(Ordering::Relaxed) {
        let mut current = match client.take() {
            Some(c) => c,
            None => match bounded(Client::connect(&load.url, load.protocol)).await {
                Ok(c) => c,
                Err(e) => {
                    shared.error(e);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let measuring = shared.measuring.load(Ordering::Relaxed);
        let started = Instant::now();
        match bounded(current.call_tool(&load.tool, arguments.clone())).await {
            Ok(_) => {
                let latency = started.elapsed();
                if measuring && shared.measuring.load(Ordering::Relaxed) {
                    latencies.push(latency);
                }
                client = Some(current);
            }
            // The connection may be broken: the next call opens a new one.
            Err(e) => shared.error(e),
        }
    }
    if let Some(client) = client {
        client.close().await;
    }
    latencies
}

/// How long one connect or call may take before it counts as an error: a lost connection or a
/// request the server never answers must show in the report, not hang the generator.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

async fn bounded<T>(
    call: impl std::future::Future<Output = Result<T, crate::BenchError>>,
) -> Result<T, String> {
    let call = async { call.await.map_err(String::from) };
    tokio::time::timeout(CALL_TIMEOUT, call)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} s", CALL_TIMEOUT.as_secs())))
}
