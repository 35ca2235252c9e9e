//! The engine's floor: every compute workload with neither fuel nor epoch interruption, against
//! native QuickJS (section `floor`). Nothing is instrumented, so this is what wasm under
//! Cranelift costs by itself, which no setting of the limits goes below. Not a target: nothing
//! would then bound a busy script's CPU time.

use crate::report::Figure;
use crate::{BenchOptions, WORKLOADS, compute, cpu_bound_config};

/// The label of the floor's figures.
const LABEL: &str = "no CPU bound (neither fuel nor epoch; not a target)";

/// The floor of every workload asked for, in a runtime of its own.
///
/// # Errors
/// When the runtime cannot be built.
pub(crate) fn figures(
    options: &BenchOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Figure>, String> {
    let runtime = options.runtime(cpu_bound_config(false, false))?;
    let mut figures = Vec::new();
    for workload in WORKLOADS.iter().filter(|w| options.wants_workload(w.name)) {
        progress(&format!("compute: {}, no CPU bound", workload.name));
        figures.push(compute::figure("floor", &runtime, workload, options, LABEL));
    }
    Ok(figures)
}
