//! `codemode bench --http`: load over MCP's streamable HTTP on loopback.
//!
//! The generator ([`load`]) runs N concurrent MCP clients ([`client`]), each on its own
//! keep-alive connection, calling the `eval` tool of a real server: `codemode serve --http`
//! started as a child process ([`server`]) or an existing URL. While it runs, the server's
//! resident memory and open descriptors are sampled from `/proc/PID` ([`proc`]). In the same
//! run it can measure, for comparison, the in-process eval rate and a Node MCP server running the
//! same script in `node:vm` ([`server::NODE_VM_PEER`]), driven by the same generator; and the
//! time `codemode serve` takes to shut down on `SIGTERM` in the middle of the load.
//!
//! Every figure lands in a [`Report`] (section `http`); errors are reported as a figure of their
//! own, whose target is 0.

pub mod client;
pub mod load;
pub mod proc;
pub mod server;

use std::path::PathBuf;
use std::time::Duration;

pub use client::Protocol;
pub use load::{Load, LoadRun};
pub use server::Server;

use crate::report::{Figure, Report, machine};
use crate::{runtime_config, throughput};

/// What the evals run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpWorkload {
    /// `return 1 + 1`.
    Trivial,
    /// One upstream tool call per eval: `mcp-server-time`'s `get_current_time`, which the
    /// server's config must name `time`.
    Tool,
    /// A script of the caller's.
    Script(String),
}

impl HttpWorkload {
    /// The script sent.
    pub fn code(&self) -> &str {
        match self {
            HttpWorkload::Trivial => "return 1 + 1",
            HttpWorkload::Tool => {
                "return (await codemode.time__get_current_time({timezone: \"UTC\"})).timezone"
            }
            HttpWorkload::Script(code) => code,
        }
    }

    /// Its name in reports.
    pub fn name(&self) -> &str {
        match self {
            HttpWorkload::Trivial => "trivial",
            HttpWorkload::Tool => "tool call",
            HttpWorkload::Script(_) => "script",
        }
    }
}

/// What `codemode bench --http` measures. [`HttpOptions::default`]: 64 then 200 clients on
/// 2026-07-28 stateless requests, 2 s warm-up, 10 s measured, the trivial workload, no
/// comparisons, a `SIGTERM` figure when the bench started the server.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// An existing server's `http://ADDR/mcp`; `None` starts `codemode serve --http` (needs
    /// [`HttpOptions::codemode_exe`]). Default `None`.
    pub url: Option<String>,
    /// The existing server's pid, for memory and descriptor samples. Default `None`.
    pub pid: Option<u32>,
    /// The `codemode` binary to start. Default `None`.
    pub codemode_exe: Option<PathBuf>,
    /// The config of the server started. Default `None`: the embedded default with the fair
    /// sharing caps raised to the number of clients ([`load_config_json`]).
    pub config: Option<PathBuf>,
    /// Concurrent clients, one run per entry. Default `[64, 200]`.
    pub clients: Vec<usize>,
    /// Unmeasured time at the start of each run. Default 2 s.
    pub warmup: Duration,
    /// Measured time of each run. Default 10 s.
    pub duration: Duration,
    /// What the evals run. Default [`HttpWorkload::Trivial`].
    pub workload: HttpWorkload,
    /// The protocol generation of the clients. Default [`Protocol::Stateless`].
    pub protocol: Protocol,
    /// Tokio worker threads of the generator. Default 2.
    pub threads: usize,
    /// Also measure the Node `node:vm` peer, with `@modelcontextprotocol/sdk` from this
    /// `node_modules` (legacy sessions: the SDK predates 2026-07-28). Default `None`.
    pub node_modules: Option<PathBuf>,
    /// Also measure the in-process eval rate (trivial workload, 2 threads). Default off.
    pub in_process: bool,
    /// Time a `SIGTERM` sent in the middle of the load (only for a server the bench started).
    /// Default on.
    pub shutdown: bool,
    /// How often the server's memory and descriptors are sampled. Default 1 s.
    pub sample_every: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            url: None,
            pid: None,
            codemode_exe: None,
            config: None,
            clients: vec![64, 200],
            warmup: Duration::from_secs(2),
            duration: Duration::from_secs(10),
            workload: HttpWorkload::Trivial,
            protocol: Protocol::Stateless,
            threads: 2,
            node_modules: None,
            in_process: false,
            shutdown: true,
            sample_every: Duration::from_secs(1),
        }
    }
}

impl HttpOptions {
    /// Checks that the options can run.
    ///
    /// # Errors
    /// Which option is wrong, and why.
    pub fn validate(&self) -> Result<(), crate::BenchError> {
        if self.url.is_none() && self.codemode_exe.is_none() {
            return Err("no server: give a URL or the codemode binary to start".into());
        }
        if self.clients.is_empty() || self.clients.contains(&0) {
            return Err("clients: at least one run, of at least 1 client".into());
        }
        if self.duration.is_zero() {
            return Err("duration: must be more than 0".into());
        }
        if self.sample_every.is_zero() {
            return Err("sample_every: must be more than 0".into());
        }
        Ok(())
    }
}

/// What one server did under every run of the load.
#[derive(Debug, Clone)]
pub struct Measured {
    /// One run per entry of [`HttpOptions::clients`]: the number of clients, what the
    /// generator measured, and the server's samples during the run (warm-up included).
    pub runs: Vec<(usize, LoadRun, Vec<proc::ProcSample>)>,
    /// Descriptors before the first client connected, and after the last one closed.
    pub fds_before_after: Option<(usize, usize)>,
}

/// Drives `url` with every run of `options` (clients speaking `protocol`), sampling `pid`.
///
/// # Errors
/// When the generator cannot run.
pub fn measure(
    options: &HttpOptions,
    url: &str,
    pid: Option<u32>,
    protocol: Protocol,
    progress: &mut dyn FnMut(&str),
) -> Result<Measured, crate::BenchError> {
    let before = pid.and_then(proc::sample).map(|(_, fds)| fds);
    let mut runs = Vec::new();
    for &clients in &options.clients {
        progress(&format!(
            "{clients} clients, {} ({}), {:?} + {:?} warm-up, {url}",
            options.workload.name(),
            protocol.name(),
            options.duration,
            options.warmup
        ));
        let sampler = pid.map(|pid| proc::Sampler::start(pid, options.sample_every));
        let run = load::run(&Load {
            url: url.to_string(),
            tool: "eval".into(),
            code: options.workload.code().to_string(),
            clients,
            warmup: options.warmup,
            duration: options.duration,
            protocol,
            threads: options.threads,
        })?;
        let samples = sampler.map(proc::Sampler::finish).unwrap_or_default();
        runs.push((clients, run, samples));
    }
    // The server closes a connection when it sees the client's FIN: wait for the count to
    // come back (a bounded number of looks; what it reaches is reported either way).
    let fds_before_after = match (pid, before) {
        (Some(pid), Some(before)) => {
            let mut after = usize::MAX;
            for _ in 0..100 {
                after = proc::sample(pid).map_or(usize::MAX, |(_, fds)| fds);
                if after <= before {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Some((before, after))
        }
        _ => None,
    };
    Ok(Measured {
        runs,
        fds_before_after,
    })
}

/// Runs `codemode bench --http`: the load against codemode, then what `options` compares it
/// with.
///
/// # Errors
/// When the options are invalid or a server cannot start.
pub fn run_http(
    options: &HttpOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Report, crate::BenchError> {
    options.validate()?;
    let machine = machine();
    let mut figures = Vec::new();
    let mut started = None;
    let (url, pid) = match (&options.url, &options.codemode_exe) {
        (Some(url), _) => (url.clone(), options.pid),
        (None, Some(exe)) => {
            progress("starting codemode serve --http");
            let config = match &options.config {
                Some(path) => path.clone(),
                None => load_config(&options.clients)?,
            };
            let server = Server::codemode(exe, Some(&config))?;
            let target = (server.url.clone(), Some(server.pid()));
            started = Some(server);
            target
        }
        (None, None) => unreachable!("validated"),
    };
    let ours = measure(options, &url, pid, options.protocol, progress)?;
    let peer = match &options.node_modules {
        Some(node_modules) => {
            progress("starting the node:vm peer");
            let server = Server::node_vm(node_modules)?;
            let pid = server.pid();
            let url = server.url.clone();
            let measured = measure(options, &url, Some(pid), Protocol::Legacy, progress)?;
            drop(server);
            Some(measured)
        }
        None => None,
    };
    let label = format!("{}, {}", options.workload.name(), options.protocol.name());
    for (i, (clients, run, samples)) in ours.runs.iter().enumerate() {
        let peer_run = peer.as_ref().map(|p| &p.runs[i].1);
        figures.extend(run_figures("codemode", *clients, &label, run, peer_run));
        figures.extend(memory_figure("codemode", *clients, samples, options.warmup));
    }
    figures.extend(fd_figure("codemode", &ours));
    if let Some(peer) = &peer {
        let label = format!("{}, 2025-11-25", options.workload.name());
        for (clients, run, samples) in &peer.runs {
            figures.extend(run_figures("node:vm peer", *clients, &label, run, None));
            figures.extend(memory_figure(
                "node:vm peer",
                *clients,
                samples,
                options.warmup,
            ));
        }
        figures.extend(fd_figure("node:vm peer", peer));
    }
    if options.in_process {
        progress("in-process evals, 2 threads");
        let runtime = options_runtime()?;
        let rate = throughput(
            &runtime,
            crate::workloads::TRIVIAL,
            2,
            options.duration.min(Duration::from_secs(5)),
        );
        let mut figure = Figure::new(
            "http",
            "in-process trivial evals, 2 threads",
            rate,
            "evals/s",
        )
        .note(
            "Runtime::eval with no transport; ratio = in-process / the best rate over HTTP above",
        );
        let best = ours
            .runs
            .iter()
            .map(|(_, run, _)| run.evals_per_s)
            .fold(0.0, f64::max);
        if best > 0.0 {
            figure.ratio = Some(rate / best);
        }
        figures.push(figure);
    }
    if let Some(mut server) = started
        && options.shutdown
    {
        progress("SIGTERM in the middle of the load");
        figures.extend(shutdown_figures(&mut server, options)?);
    }
    Ok(Report { machine, figures })
}

/// The config of a server the bench starts without `--config`: the defaults, except that every
/// generator client may run an eval at once. All clients come from 127.0.0.1, which fair
/// sharing counts as one client (`limits.perClient`, `server.http.maxSessionsPerClient`), and
/// the listener as one address (`server.http.maxConnectionsPerIp`: a few connections each).
pub fn load_config_json(clients: &[usize]) -> serde_json::Value {
    let most = clients.iter().copied().max().unwrap_or(1);
    serde_json::json!({
        "limits": {"perClient": {"maxConcurrentEvals": most.max(32)}},
        "server": {"http": {"maxSessions": most.max(1000), "maxSessionsPerClient": most.max(64),
                            "maxConnectionsPerIp": (most * 4).max(64)}}
    })
}

/// Writes [`load_config_json`] to a temporary file.
fn load_config(clients: &[usize]) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("codemode-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join("codemode.json");
    std::fs::write(&path, load_config_json(clients).to_string())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

fn options_runtime() -> Result<codemode_runtime::Runtime, String> {
    codemode_runtime::Runtime::new(&runtime_config(64)).map_err(|e| e.to_string())
}

/// Throughput, latency and errors of one run; `peer` (the same run against the peer) gives
/// the ratio.
fn run_figures(
    who: &str,
    clients: usize,
    label: &str,
    run: &LoadRun,
    peer: Option<&LoadRun>,
) -> Vec<Figure> {
    let mut rate = Figure::new(
        "http",
        format!("{who}: evals/s, {clients} keep-alive clients ({label})"),
        run.evals_per_s,
        "evals/s",
    );
    if who == "codemode" && clients == 64 && label.starts_with("trivial") {
        rate = rate.target("≥ 5,000 evals/s", run.evals_per_s >= 5000.0);
    }
    if let Some(peer) = peer {
        rate.ratio = Some(run.evals_per_s / peer.evals_per_s);
        rate = rate.note(format!(
            "ratio = codemode / node:vm peer ({:.0} evals/s)",
            peer.evals_per_s
        ));
    }
    let l = &run.latency_ms;
    let mut latency = Figure::new(
        "http",
        format!("{who}: latency p50, {clients} clients ({label})"),
        l.percentile(50.0),
        "ms",
    )
    .p99(l.percentile(99.0))
    .note(format!("max {:.2} ms over {} evals", l.max(), run.measured));
    if who == "codemode" && clients == 64 && label.starts_with("trivial") {
        latency.target = Some("p99 ≤ 20 ms".into());
        latency.met = Some(l.percentile(99.0) <= 20.0);
    }
    let mut errors = Figure::new(
        "http",
        format!("{who}: errors, {clients} clients ({label})"),
        run.errors as f64,
        "",
    )
    .target("0", run.errors == 0);
    if !run.first_errors.is_empty() {
        errors = errors.note(run.first_errors.join(" | "));
    }
    vec![rate, latency, errors]
}

/// Resident memory of a server during one run: growth from the end of the warm-up to the end.
fn memory_figure(
    who: &str,
    clients: usize,
    samples: &[proc::ProcSample],
    warmup: Duration,
) -> Option<Figure> {
    let first = samples.iter().find(|s| s.at_s >= warmup.as_secs_f64())?;
    let last = samples.last()?;
    let max = samples.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    let growth = (last.rss_kib as f64 / first.rss_kib as f64 - 1.0) * 100.0;
    Some(
        Figure::new(
            "http",
            format!("{who}: RSS growth after warm-up, {clients} clients"),
            growth,
            "%",
        )
        .target("≤ 10%", growth <= 10.0)
        .note(format!(
            "{} KiB after warm-up → {} KiB at the end (max {max} KiB, {} samples)",
            first.rss_kib,
            last.rss_kib,
            samples.len()
        )),
    )
}

/// Open descriptors of a server before the load and after the clients left.
fn fd_figure(who: &str, measured: &Measured) -> Option<Figure> {
    let (before, after) = measured.fds_before_after?;
    let peak = measured
        .runs
        .iter()
        .flat_map(|(_, _, samples)| samples.iter().map(|s| s.fds))
        .max()
        .unwrap_or(0);
    Some(
        Figure::new(
            "http",
            format!("{who}: open fds after the clients left"),
            after as f64,
            "fds",
        )
        .target(&format!("= {before} (before the load)"), after <= before)
        .note(format!("{peak} at the peak")),
    )
}

/// `SIGTERM` to the server in the middle of a load of the first client count: how long until it
/// exits, and its exit status.
fn shutdown_figures(server: &mut Server, options: &HttpOptions) -> Result<Vec<Figure>, String> {
    let load = Load {
        url: server.url.clone(),
        tool: "eval".into(),
        code: options.workload.code().to_string(),
        clients: options.clients[0],
        warmup: Duration::from_secs(2),
        duration: Duration::from_secs(2),
        protocol: options.protocol,
        threads: options.threads,
    };
    let generator = std::thread::spawn(move || load::run(&load));
    std::thread::sleep(Duration::from_secs(1));
    let (status, took) = server.terminate(Duration::from_secs(30))?;
    let _ = generator.join();
    Ok(vec![
        Figure::new(
            "http",
            format!(
                "SIGTERM under load ({} clients) to exit",
                options.clients[0]
            ),
            took.as_secs_f64() * 1e3,
            "ms",
        )
        .target("exit 0", status.success())
        .note(format!("{status}")),
    ])
}
