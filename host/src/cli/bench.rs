//! `codemode bench`: argument parsing and wiring only; the measurements live in the
//! `codemode-bench` crate.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use clap::builder::PossibleValuesParser;

use codemode_bench::{self as bench, BenchOptions};

use super::EXIT_USAGE;

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
}

pub fn bench(args: BenchArgs) -> ExitCode {
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
    // The measurements drive their own tokio runtimes: run them off this async context.
    let worker = std::thread::spawn(move || {
        bench::run(&options, &mut |step| eprintln!("codemode bench: {step}…"))
    });
    let report = match worker.join() {
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
    let text = if args.json {
        serde_json::to_string_pretty(&report).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    } else {
        report.table()
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
    ExitCode::SUCCESS
}
