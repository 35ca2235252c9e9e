//! Whole-process start-up: `codemode run hello.js` with a warm cache, and a first run ever with
//! an empty one (section `start-up`, target ≤ 20 ms warm).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::report::Figure;
use crate::{BenchOptions, Samples, workloads};

/// A scratch directory, removed on drop.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(what: &str) -> std::io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "codemode-bench-{what}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `codemode run <script>` once; `cache_dir` overrides `CODEMODE_CACHE_DIR`.
fn run_process(exe: &Path, script: &Path, cache_dir: Option<&Path>) -> Result<Duration, String> {
    let mut command = std::process::Command::new(exe);
    command
        .arg("run")
        .arg(script)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(dir) = cache_dir {
        command.env("CODEMODE_CACHE_DIR", dir);
    }
    let started = Instant::now();
    let status = command
        .status()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let elapsed = started.elapsed();
    if !status.success() {
        return Err(format!("`{} run` failed: {status}", exe.display()));
    }
    Ok(elapsed)
}

/// Whole-process time of `codemode run hello.js` with a warm cache (ms), `runs` times after one
/// warm-up run; and, with `first_run`, the time of a run with an empty cache.
///
/// # Errors
/// When the binary cannot be run or the script fails.
pub fn process_start(
    exe: &Path,
    runs: usize,
    first_run: bool,
) -> Result<(Samples, Option<Duration>), crate::BenchError> {
    let scratch = ScratchDir::new("start").map_err(|e| e.to_string())?;
    let script = scratch.0.join("hello.js");
    std::fs::write(&script, workloads::HELLO).map_err(|e| e.to_string())?;
    let first = if first_run {
        let cache = scratch.0.join("empty-cache");
        Some(run_process(exe, &script, Some(&cache))?)
    } else {
        None
    };
    run_process(exe, &script, None)?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        times.push(run_process(exe, &script, None)?);
    }
    Ok((Samples::millis(&times), first))
}

/// The section's process figures for the binary `exe`; a figure with the error as its note when
/// the binary cannot be run.
pub(crate) fn figures(exe: &Path, options: &BenchOptions) -> Vec<Figure> {
    match process_start(exe, options.startup_runs, options.first_run) {
        Ok((warm, first)) => {
            let mut figures = vec![
                Figure::new(
                    "start-up",
                    "`codemode run hello.js`, whole process, warm cache",
                    warm.median(),
                    "ms",
                )
                .p99(warm.percentile(99.0))
                .target("≤ 20 ms", warm.median() <= 20.0),
            ];
            if let Some(first) = first {
                figures.push(
                    Figure::new(
                        "start-up",
                        "`codemode run hello.js`, first run ever (empty cache)",
                        first.as_secs_f64() * 1e3,
                        "ms",
                    )
                    .note("compiles the guest, snapshots it, compiles the snapshot, caches it"),
                );
            }
            figures
        }
        Err(e) => {
            vec![Figure::new("start-up", "`codemode run hello.js`", f64::NAN, "ms").note(e)]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_that_cannot_run_is_a_figure_with_a_note() {
        let options = BenchOptions {
            startup_runs: 1,
            first_run: false,
            ..BenchOptions::quick()
        };
        let missing = Path::new("/nonexistent/codemode");
        let figures = figures(missing, &options);
        assert_eq!(figures.len(), 1);
        assert!(figures[0].value.is_nan());
        let note = figures[0].note.as_deref().unwrap_or_default();
        assert!(
            note.starts_with("cannot run /nonexistent/codemode: "),
            "{note}"
        );
    }
}
