//! Compute workloads in the sandbox against the same QuickJS built natively, interleaved
//! (section `compute`, target ≤ 1.5× native QuickJS).

use std::time::Instant;

use codemode_runtime::{NoTools, Runtime};
use serde_json::Value;

use crate::report::Figure;
use crate::{BenchOptions, Samples, Workload, eval_options, native, tokio_current};

/// One compute workload, in the sandbox and natively, interleaved.
#[derive(Debug, Clone)]
pub struct Compute {
    /// Sandbox times (ms).
    pub sandbox: Samples,
    /// Native times (ms), when the baseline is built in.
    pub native: Option<Samples>,
    /// The sandbox's result (JSON).
    pub result: Value,
    /// Why there is no native figure, or why it disagrees with the sandbox.
    pub native_problem: Option<String>,
}

/// Runs `workload` `rounds` times in the sandbox and natively, alternating, after one untimed
/// round of each. The native result must equal the sandbox's, or there is no native figure.
///
/// # Panics
/// When the sandboxed eval fails.
pub fn compute(runtime: &Runtime, workload: &Workload, rounds: usize) -> Compute {
    let options = eval_options();
    let tokio = tokio_current();
    let mut sandbox = Vec::with_capacity(rounds);
    let mut native = Vec::with_capacity(rounds);
    let mut native_problem = None;
    let mut result = Value::Null;
    // One untimed round of each first (caches, lazy compilation of host code).
    for round in 0..=rounds {
        let started = Instant::now();
        let outcome = tokio.block_on(runtime.eval(workload.source, &options, &NoTools));
        let elapsed = started.elapsed();
        assert!(
            outcome.ok,
            "workload {} failed in the sandbox: {:?}",
            workload.name, outcome.error
        );
        result = outcome.result;
        if round > 0 {
            sandbox.push(elapsed);
        }
        if native_problem.is_some() {
            continue;
        }
        match native::eval(workload.source) {
            Ok((elapsed, json)) => {
                if serde_json::from_str::<Value>(&json).ok().as_ref() != Some(&result) {
                    native_problem = Some(format!(
                        "native result {json} differs from the sandbox's {result}"
                    ));
                } else if round > 0 {
                    native.push(elapsed);
                }
            }
            Err(e) => native_problem = Some(e.into()),
        }
    }
    Compute {
        sandbox: Samples::millis(&sandbox),
        native: (native_problem.is_none()).then(|| Samples::millis(&native)),
        result,
        native_problem,
    }
}

/// The compute section: every workload asked for on each runtime of `limit_sets` (labelled by
/// how CPU time is bounded), against the 1.5× target.
pub(crate) fn figures(
    limit_sets: &[(String, Runtime)],
    options: &BenchOptions,
    progress: &mut dyn FnMut(&str),
) -> Vec<Figure> {
    let mut figures = Vec::new();
    for (label, runtime) in limit_sets {
        for workload in crate::WORKLOADS
            .iter()
            .filter(|w| options.wants_workload(w.name))
        {
            progress(&format!("compute: {}, {label}", workload.name));
            let figure = figure("compute", runtime, workload, options, label);
            figures.push(match figure.ratio {
                Some(ratio) => figure.target("≤ 1.5× native QuickJS", ratio <= 1.5),
                None => figure,
            });
        }
    }
    figures
}

/// A compute workload in the sandbox against native QuickJS, interleaved: the sandbox's median
/// with the native median and the ratio, or a note saying why there is no native figure.
pub(crate) fn figure(
    section: &str,
    runtime: &Runtime,
    workload: &Workload,
    options: &BenchOptions,
    label: &str,
) -> Figure {
    let c = compute(runtime, workload, options.compute_rounds);
    let mut figure = Figure::new(
        section,
        format!("{}: {}, {label}", workload.name, workload.what),
        c.sandbox.median(),
        "ms",
    );
    match (&c.native, &c.native_problem) {
        (Some(native), _) => {
            figure.native = Some(native.median());
            figure.ratio = Some(c.sandbox.median() / native.median());
            figure
        }
        (None, problem) => figure.note(format!(
            "native baseline: {}",
            problem.as_deref().unwrap_or("unavailable")
        )),
    }
}
