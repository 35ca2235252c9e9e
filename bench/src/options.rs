//! What a run measures and how long ([`BenchOptions`]), and the runtime configurations measured.

use std::path::PathBuf;
use std::time::Duration;

use codemode_runtime::{EvalOptions, Runtime, RuntimeConfig};

/// The sections of a run, in the order measured: the names [`BenchOptions::only`] takes.
pub const SECTIONS: &[&str] = &[
    "eval",
    "tools",
    "compute",
    "floor",
    "suspended",
    "suspend",
    "start-up",
    "limits",
    "techniques",
];

/// What to measure, and how long.
///
/// [`BenchOptions::default`] is the full run of `codemode bench`; [`BenchOptions::quick`] the
/// smoke run of `codemode bench --quick`.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Samples of the trivial eval (after as many warm-up evals). Default 5,000.
    pub eval_samples: usize,
    /// Interleaved rounds of each compute workload (sandbox and native). Default 7.
    pub compute_rounds: usize,
    /// Length of the throughput run. Default 3 s.
    pub throughput_time: Duration,
    /// Threads of the throughput run. Default 2.
    pub threads: usize,
    /// Evals suspended at once in the suspension run. Default 1,000.
    pub suspended: usize,
    /// The `codemode` binary, for the whole-process start-up figures; `None` (the default) skips
    /// them.
    pub codemode_exe: Option<PathBuf>,
    /// Runs of `codemode run hello.js` with a warm cache. Default 20.
    pub startup_runs: usize,
    /// Also time a first run ever (empty cache: compile and snapshot the guest). Default on.
    pub first_run: bool,
    /// Also measure what fuel and epoch interruption cost (section `limits`). Default on.
    pub limits_cost: bool,
    /// Also run every compute workload with neither fuel nor epoch interruption, against native:
    /// what wasm under Cranelift costs by itself, the floor no setting of the limits goes below
    /// (section `floor`; not a target, since nothing then bounds a busy script's CPU time).
    /// Default on.
    pub engine_floor: bool,
    /// Also measure each technique by switching it off (one runtime per variant; section
    /// `techniques`). Default off.
    pub techniques: bool,
    /// Measure eval, tools and compute a second time with fuel off (epoch interruption alone
    /// bounds CPU time): the targets allow either. Ignored when `tweak` is set. Default on.
    pub epoch_only_too: bool,
    /// Measure another build of the guest (same ABI) instead of the embedded one: for
    /// experiments with guest build flags. Default `None`.
    pub guest: Option<Vec<u8>>,
    /// Settings applied to every runtime measured (e.g. fuel off), after the defaults. Default
    /// `None`.
    pub tweak: Option<fn(&mut RuntimeConfig)>,
    /// Only these sections (see [`SECTIONS`]); empty (the default) = all that are enabled.
    pub only: Vec<String>,
    /// Only these compute workloads (by name); empty (the default) = all.
    pub workloads: Vec<String>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            eval_samples: 5000,
            compute_rounds: 7,
            throughput_time: Duration::from_secs(3),
            threads: 2,
            suspended: 1000,
            codemode_exe: None,
            startup_runs: 20,
            first_run: true,
            limits_cost: true,
            engine_floor: true,
            techniques: false,
            epoch_only_too: true,
            guest: None,
            tweak: None,
            only: Vec::new(),
            workloads: Vec::new(),
        }
    }
}

impl BenchOptions {
    /// Fewer samples everywhere, and no first run, limits or floor: a smoke run of every
    /// measurement in seconds.
    pub fn quick() -> Self {
        BenchOptions {
            eval_samples: 500,
            compute_rounds: 3,
            throughput_time: Duration::from_millis(500),
            threads: 2,
            suspended: 200,
            startup_runs: 5,
            first_run: false,
            limits_cost: false,
            engine_floor: false,
            ..BenchOptions::default()
        }
    }

    /// `true` when `section` is to be measured (see [`BenchOptions::only`]).
    pub(crate) fn wants(&self, section: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|s| s == section)
    }

    /// `true` when the compute workload `workload` is to be measured (see
    /// [`BenchOptions::workloads`]).
    pub(crate) fn wants_workload(&self, workload: &str) -> bool {
        self.workloads.is_empty() || self.workloads.iter().any(|n| n == workload)
    }

    /// Builds a runtime of `config` with these options' guest and tweak.
    ///
    /// # Errors
    /// When the runtime cannot be built.
    pub fn runtime(&self, mut config: RuntimeConfig) -> Result<Runtime, crate::BenchError> {
        if let Some(tweak) = self.tweak {
            tweak(&mut config);
        }
        match &self.guest {
            Some(wasm) => Runtime::with_guest(&config, wasm),
            None => Runtime::new(&config),
        }
        .map_err(|e| with_sources(&e).into())
    }
}

/// The runtime configuration measured: the defaults (snapshot, pooling, keep-resident,
/// pagemap_scan, fuel and epochs on), with a pool of `slots`.
pub fn runtime_config(slots: u32) -> RuntimeConfig {
    let mut config = RuntimeConfig::default();
    config.max_concurrent_evals(slots);
    config
}

/// The configuration of a runtime for compute workloads (a pool of 8) whose CPU time is bounded
/// by fuel, by epoch interruption, by both (the default) or by neither (the engine's floor).
pub fn cpu_bound_config(fuel: bool, epoch: bool) -> RuntimeConfig {
    let mut config = runtime_config(8);
    config.fuel(fuel).epoch_interruption(epoch);
    config
}

/// The eval options measured: every limit at its default (fuel, memory, timeout, output, tool
/// calls).
pub fn eval_options() -> EvalOptions {
    EvalOptions::default()
}

/// An error and its causes, `outer: inner: …` (a runtime error keeps wasmtime's cause as its
/// source rather than in its message).
fn with_sources(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_and_workloads_select_by_exact_name() {
        let all = BenchOptions::default();
        assert!(SECTIONS.iter().all(|s| all.wants(s)));
        assert!(all.wants_workload("loop"));
        let some = BenchOptions {
            only: vec!["floor".into()],
            workloads: vec!["json".into()],
            ..BenchOptions::quick()
        };
        assert!(some.wants("floor"));
        assert!(!some.wants("compute"));
        assert!(some.wants_workload("json"));
        assert!(!some.wants_workload("js"));
    }
}
