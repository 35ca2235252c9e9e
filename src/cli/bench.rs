//! `codemode bench`: argument parsing and wiring only; the measurements live in the
//! `codemode-bench` crate.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use clap::builder::PossibleValuesParser;

use codemode_bench::{self as bench, BenchOptions};

use super::common::EXIT_USAGE;

mod store;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Print the report as JSON on stdout instead of a table.
    #[arg(long)]
    json: bool,

    /// Fewer samples: a smoke run of every measurement in seconds.
    #[arg(long)]
    quick: bool,

    /// Also measure each technique (snapshot, pooling, keep-resident, pagemap_scan) by switching
    /// it off, and the opt-in slot reset off the request path by switching it on.
    #[arg(long)]
    techniques: bool,

    /// Skip the whole-process start-up figures (they run this binary again).
    #[arg(long)]
    no_process: bool,

    /// Only these sections (floor: the compute workloads with no CPU bound at all, against
    /// native; limits and techniques: studies, see docs/PERFORMANCE.md).
    #[arg(long, value_delimiter = ',', value_name = "SECTIONS",
          value_parser = PossibleValuesParser::new(bench::SECTIONS))]
    only: Vec<String>,

    /// Only these compute workloads.
    #[arg(long, value_delimiter = ',', value_name = "NAMES",
          value_parser = PossibleValuesParser::new(bench::WORKLOADS.iter().map(|w| w.name)))]
    workload: Vec<String>,

    /// Measure another build of the guest module (same ABI) instead of the embedded one.
    #[arg(long, value_name = "FILE")]
    guest: Option<std::path::PathBuf>,

    /// Measure with fuel metering off only (by default eval, tools and compute are measured
    /// twice: with fuel + epoch, the default, and with epoch interruption alone).
    #[arg(long)]
    no_fuel: bool,

    /// Also measure what parking (`put`) and resuming (`take`) a typical saved eval cost on
    /// this Redis or Valkey (`redis://HOST:PORT/DB`, 6.2 or later) against the local store;
    /// the figures join the `suspend` section. Its records are removed as they are measured.
    #[arg(long, value_name = "URL", value_parser = codemode_config::RedisUrl::parse,
          conflicts_with = "http")]
    redis: Option<codemode_config::RedisUrl>,

    #[command(flatten)]
    http: HttpArgs,
}

/// `codemode bench --http`: load over MCP's streamable HTTP instead of the in-process sections.
#[derive(Debug, Args)]
pub struct HttpArgs {
    /// Load over HTTP: start `codemode serve --http 127.0.0.1:0` (or use --url) and drive it with
    /// concurrent MCP clients on keep-alive connections; report evals/s, latency, errors, and
    /// the server's memory and open descriptors over time.
    #[arg(long)]
    http: bool,

    /// With --http: drive this running server (`http://HOST:PORT/mcp`) instead of starting one.
    #[arg(long, value_name = "URL", requires = "http")]
    url: Option<String>,

    /// With --url: the server's pid, to sample its memory and descriptors.
    #[arg(long, value_name = "PID", requires = "url")]
    pid: Option<u32>,

    /// With --http: the config of the server started (e.g. with a `time` upstream for
    /// `--load tool`).
    #[arg(long, value_name = "FILE", requires = "http")]
    config: Option<std::path::PathBuf>,

    /// With --http: concurrent clients, one run per number.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "N,…",
        default_value = "64,200",
        requires = "http"
    )]
    clients: Vec<usize>,

    /// With --http: measured seconds of each run.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 10.0,
        requires = "http"
    )]
    duration: f64,

    /// With --http: unmeasured seconds at the start of each run.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0, requires = "http")]
    warmup: f64,

    /// With --http: what each eval runs: `trivial` (return 1 + 1), `tool` (one call to the
    /// `time` upstream's get_current_time), or `script:CODE`.
    #[arg(
        long = "load",
        value_name = "WORKLOAD",
        default_value = "trivial",
        requires = "http"
    )]
    load: String,

    /// With --http: the clients' protocol, `stateless` (2026-07-28) or `legacy` (2025-11-25
    /// sessions).
    #[arg(
        long,
        value_name = "PROTOCOL",
        default_value = "stateless",
        requires = "http"
    )]
    protocol: String,

    /// With --http: also drive a Node MCP server running the script in `node:vm`, with
    /// @modelcontextprotocol/sdk from this node_modules directory.
    #[arg(long, value_name = "DIR", requires = "http")]
    compare_node: Option<std::path::PathBuf>,

    /// With --http: also measure the in-process eval rate in the same run.
    #[arg(long, requires = "http")]
    compare_in_process: bool,
}

impl HttpArgs {
    fn options(&self) -> Result<bench::http::HttpOptions, String> {
        let workload = match self.load.as_str() {
            "trivial" => bench::http::HttpWorkload::Trivial,
            "tool" => bench::http::HttpWorkload::Tool,
            other => match other.strip_prefix("script:") {
                Some(code) => bench::http::HttpWorkload::Script(code.to_string()),
                None => {
                    return Err(format!(
                        "--load: expected `trivial`, `tool` or `script:CODE`, got `{other}`"
                    ));
                }
            },
        };
        let seconds = |name: &str, value: f64| {
            std::time::Duration::try_from_secs_f64(value)
                .map_err(|_| format!("--{name}: expected seconds ≥ 0, got {value}"))
        };
        let options = bench::http::HttpOptions {
            url: self.url.clone(),
            pid: self.pid,
            codemode_exe: std::env::current_exe().ok(),
            config: self.config.clone(),
            clients: self.clients.clone(),
            warmup: seconds("warmup", self.warmup)?,
            duration: seconds("duration", self.duration)?,
            workload,
            protocol: bench::http::Protocol::parse(&self.protocol)
                .map_err(|e| format!("--protocol: {e}"))?,
            node_modules: self.compare_node.clone(),
            in_process: self.compare_in_process,
            ..bench::http::HttpOptions::default()
        };
        options.validate()?;
        Ok(options)
    }
}

pub fn bench(args: BenchArgs) -> ExitCode {
    if args.http.http {
        let options = match args.http.options() {
            Ok(options) => options,
            Err(e) => {
                eprintln!("codemode bench: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        };
        let worker = std::thread::spawn(move || {
            bench::http::run_http(&options, &mut |step| eprintln!("codemode bench: {step}…"))
        });
        return print_report(worker.join(), args.json);
    }
    let mut options = if args.quick {
        BenchOptions::quick()
    } else {
        BenchOptions::default()
    };
    options.techniques = args.techniques;
    options.only = args.only;
    options.workloads = args.workload;
    if args.no_fuel {
        options.tweak = Some(|c| {
            c.fuel(false);
        });
    }
    if let Some(path) = &args.guest {
        match std::fs::read(path) {
            Ok(wasm) => options.guest = Some(wasm),
            Err(e) => {
                eprintln!("codemode bench: cannot read {}: {e}", path.display());
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    if !args.no_process {
        options.codemode_exe = std::env::current_exe().ok();
    }
    let redis = args.redis;
    if redis.is_none() && (options.only.is_empty() || options.only.iter().any(|s| s == "suspend")) {
        eprintln!("codemode bench: {}", store::NOT_MEASURED);
    }
    let samples = if args.quick {
        store::SAMPLES / 10
    } else {
        store::SAMPLES
    };
    // The measurements drive their own tokio runtimes: run them off this async context.
    let worker = std::thread::spawn(move || {
        // The store first: an unreachable Redis fails before minutes of other measurements.
        let stored = match &redis {
            Some(url) => {
                eprintln!("codemode bench: store put and take, local and {url}…");
                Some(store::measure(url, samples)?)
            }
            None => None,
        };
        let mut report = bench::run(&options, &mut |step| eprintln!("codemode bench: {step}…"))?;
        if let Some(figures) = stored {
            let at = report
                .figures
                .iter()
                .rposition(|f| f.section == "suspend")
                .map_or(report.figures.len(), |i| i + 1);
            report.figures.splice(at..at, figures);
        }
        Ok(report)
    });
    print_report(worker.join(), args.json)
}

/// Prints the report of a measurement thread as a table or JSON.
fn print_report(
    joined: std::thread::Result<Result<bench::Report, bench::BenchError>>,
    json: bool,
) -> ExitCode {
    let report = match joined {
        Ok(Ok(report)) => report,
        Ok(Err(e)) => {
            eprintln!("codemode bench: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
        Err(_) => {
            eprintln!("codemode bench: a measurement failed (see the panic above)");
            return ExitCode::FAILURE;
        }
    };
    let text = if json {
        serde_json::to_string_pretty(&report).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    } else {
        report.table()
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
    ExitCode::SUCCESS
}
