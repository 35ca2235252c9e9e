//! [`run`]: every section a `codemode bench` run asks for, in the order of
//! [`SECTIONS`](crate::SECTIONS), gathered into one [`Report`].

use std::time::Instant;

use crate::report::{Figure, Report, machine};
use crate::{
    BenchOptions, compute, floor, limits, runtime_config, startup, suspend, suspended, techniques,
    throughput, tool_calls, trivial,
};

/// Runs every measurement `options` asks for and gathers the report. `progress` receives a line
/// before each measurement (for stderr).
///
/// # Errors
/// When a runtime cannot be built.
///
/// # Panics
/// When a measured eval fails.
pub fn run(
    options: &BenchOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Report, crate::BenchError> {
    let mut figures = Vec::new();
    let machine = machine();

    progress("building the runtimes");
    let started = Instant::now();
    let runtime = options.runtime(runtime_config(64))?;
    figures.push(
        Figure::new(
            "start-up",
            "Runtime::new (cache warm unless first use)",
            started.elapsed().as_secs_f64() * 1e3,
            "ms",
        )
        .note("engine, pool, compiled snapshot from the cache"),
    );
    // Eval, tools and compute are measured with each way of bounding CPU time.
    let mut limit_sets = vec![(limits_label(options, true), runtime)];
    if options.epoch_only_too && options.tweak.is_none() {
        let mut config = runtime_config(64);
        config.fuel(false);
        limit_sets.push((limits_label(options, false), options.runtime(config)?));
    }
    if options.wants("eval") {
        progress("trivial eval latency and throughput");
        figures.extend(trivial::figures(&limit_sets, options));
        figures.extend(throughput::figures(&limit_sets, options));
    }
    if options.wants("tools") {
        for (label, runtime) in &limit_sets {
            progress(&format!("tool-call round trip, {label}"));
            figures.push(tool_calls::figure(runtime, label));
        }
    }
    if options.wants("compute") {
        figures.extend(compute::figures(&limit_sets, options, progress));
    }
    drop(limit_sets);
    if options.engine_floor && options.wants("floor") {
        figures.extend(floor::figures(options, progress)?);
    }
    if options.wants("suspended") {
        progress(&format!("{} suspended evals", options.suspended));
        figures.extend(suspended::figures(options)?);
    }
    if options.wants("suspend") {
        progress("saving and resuming parked evals");
        figures.extend(suspend::figures(options)?);
    }
    if let Some(exe) = options
        .codemode_exe
        .as_deref()
        .filter(|_| options.wants("start-up"))
    {
        progress("process start-up");
        figures.extend(startup::figures(exe, options));
    }
    if options.limits_cost && options.wants("limits") {
        progress("cost of fuel and epoch interruption");
        figures.extend(limits::figures(options)?);
    }
    if options.techniques && options.wants("techniques") {
        progress("techniques, one at a time");
        figures.extend(techniques::figures(options)?);
    }
    Ok(Report { machine, figures })
}

/// How CPU time is bounded in a measured runtime: `fuel` on or off (epoch interruption is always
/// on in the figures); "as tweaked" when `--no-fuel` or another tweak decides.
fn limits_label(options: &BenchOptions, fuel: bool) -> String {
    match (options.tweak.is_some(), fuel) {
        (true, _) => "limits as tweaked".into(),
        (false, true) => "fuel + epoch (default)".into(),
        (false, false) => "epoch only (fuel off)".into(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Every section runs and reports finite figures (no timing is asserted: machines vary).
    #[test]
    fn a_tiny_run_of_every_section_reports_its_figures() {
        let options = BenchOptions {
            eval_samples: 20,
            compute_rounds: 1,
            throughput_time: Duration::from_millis(50),
            suspended: 8,
            startup_runs: 0,
            workloads: vec!["loop".into()],
            engine_floor: true,
            ..BenchOptions::quick()
        };
        let report = run(&options, &mut |_| {}).expect("the bench runs");
        let sections: Vec<&str> = report.figures.iter().map(|f| f.section.as_str()).collect();
        for section in [
            "start-up",
            "eval",
            "tools",
            "compute",
            "floor",
            "suspended",
            "suspend",
        ] {
            assert!(
                sections.contains(&section),
                "no {section} figure: {sections:?}"
            );
        }
        for figure in &report.figures {
            assert!(figure.value.is_finite(), "{figure:?}");
        }
        // The floor is a study, not a target: it never reads as met or missed.
        let floor: Vec<&Figure> = report
            .figures
            .iter()
            .filter(|f| f.section == "floor")
            .collect();
        assert_eq!(floor.len(), 1, "one floor figure per workload asked for");
        assert!(floor[0].met.is_none() && floor[0].name.starts_with("loop: "));
        let table = report.table();
        assert!(table.contains("trivial eval"));
        // Both ways of bounding CPU time are measured.
        assert!(table.contains("fuel + epoch (default)"), "{table}");
        assert!(table.contains("epoch only (fuel off)"), "{table}");
        serde_json::to_string(&report).expect("the report serialises");
    }

    #[test]
    fn only_names_the_sections_measured() {
        let options = BenchOptions {
            eval_samples: 10,
            only: vec!["tools".into()],
            ..BenchOptions::quick()
        };
        let report = run(&options, &mut |_| {}).expect("the bench runs");
        let sections: Vec<&str> = report.figures.iter().map(|f| f.section.as_str()).collect();
        // Runtime::new is always reported; then one tools figure per way of bounding CPU time.
        assert_eq!(sections, ["start-up", "tools", "tools"]);
    }
}
