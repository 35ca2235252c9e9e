//! Durable suspension (section `suspend`): saving a parked eval to a local file, with and
//! without fsync, restoring and resuming it, and the saved size — for the typical eval of the
//! targets, one call awaiting a human after building a 10,000-element array.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codemode_runtime::{
    BoxFuture, CallContext, EvalControl, EvalStep, ParkRequest, Runtime, Suspended, ToolError,
    ToolHost,
};
use serde_json::{Value, json};

use crate::report::Figure;
use crate::{BenchOptions, Samples, eval_options, runtime_config, tokio_current, workloads};

/// Parked evals measured, at most.
const MAX_SAMPLES: usize = 300;

/// A tool whose every call waits for a human who never answers (the eval parks in it).
pub struct Human;

impl ToolHost for Human {
    fn call<'a>(
        &'a self,
        _name: &'a str,
        _args: Value,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let _wait = cx.awaiting_human(json!({"approval": cx.call_id}));
            std::future::pending().await
        })
    }

    fn tool_names(&self) -> Vec<String> {
        vec!["ask".into()]
    }
}

/// Runs [`workloads::PARK`] until it parks in its call.
///
/// # Panics
/// When the eval finishes instead.
pub fn park_typical<'a>(runtime: &'a Runtime) -> BoxFuture<'a, Suspended> {
    Box::pin(async move {
        let request = ParkRequest::new();
        request.request();
        let mut control = EvalControl::new();
        control.park(request);
        let id = runtime.allocate_eval_id();
        match runtime
            .eval_parkable(id, workloads::PARK, &eval_options(), &Human, &control)
            .await
        {
            EvalStep::Suspended(suspended) => suspended,
            EvalStep::Finished(outcome) => panic!("the eval finished: {:?}", outcome.error),
        }
    })
}

/// Resumes a parked [`workloads::PARK`] with its answer, to the end.
///
/// # Panics
/// When it does not finish with the expected result.
pub fn resume_typical<'a>(runtime: &'a Runtime, suspended: &'a Suspended) -> BoxFuture<'a, ()> {
    Box::pin(async move {
        let call = suspended.pending()[0].call_id;
        let step = runtime
            .resume(
                suspended,
                vec![(call, Ok(json!(1)))],
                &Human,
                &EvalControl::new(),
            )
            .await
            .expect("resuming");
        let outcome = step.finished().expect("finishes");
        assert_eq!(outcome.result, json!(10_001), "{:?}", outcome.error);
    })
}

/// Writes `bytes` to a new file at `path` as a store would, syncing it to disk when `fsync`.
///
/// # Panics
/// When the file cannot be written (or exists).
pub fn write_file(path: &Path, bytes: &[u8], fsync: bool) {
    let mut file = std::fs::File::create_new(path).expect("creating the file");
    file.write_all(bytes).expect("writing the file");
    if fsync {
        file.sync_data().expect("syncing the file");
    }
}

/// What [`suspend`] measured, each per parked eval, in µs (sizes in bytes).
#[derive(Debug, Clone)]
pub struct Suspend {
    /// Capturing the sandbox at parking (inside the eval).
    pub capture: Samples,
    /// [`Suspended::save`]: encoding and compressing.
    pub encode: Samples,
    /// Capture + encode + writing a new file, without fsync.
    pub save: Samples,
    /// The same, with fsync.
    pub save_fsync: Samples,
    /// Reading the file, [`Suspended::load`] and resuming to the end.
    pub restore_resume: Samples,
    /// Saved bytes.
    pub size: Samples,
    /// The memory pages saved, before compression.
    pub memory: Samples,
}

/// Parks `samples` typical evals one after another and measures saving and resuming each.
/// Each save writes a new file (as a store does: a new name, never a truncated old file, which
/// ext4 flushes on close), removed once the sample is taken.
pub fn suspend(runtime: &Runtime, samples: usize, dir: &Path) -> Suspend {
    let tokio = tokio_current();
    let file = |round: usize, kind: &str| {
        dir.join(format!(
            "codemode-bench-suspend-{}-{round}-{kind}.bin",
            std::process::id()
        ))
    };
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let mut m: [Vec<f64>; 7] = Default::default();
    for round in 0..samples + 10 {
        let suspended = tokio.block_on(park_typical(runtime));
        let capture = suspended.capture_time().unwrap_or_default();
        let (plain, synced_path) = (file(round, "plain"), file(round, "fsync"));
        let started = Instant::now();
        let bytes = suspended.save();
        let encoded = started.elapsed();
        write_file(&plain, &bytes, false);
        let saved = started.elapsed();
        let started = Instant::now();
        write_file(&synced_path, &bytes, true);
        let synced = encoded + started.elapsed();
        let started = Instant::now();
        let read = std::fs::read(&plain).expect("reading the file");
        let loaded = Suspended::load(&read).expect("loading");
        tokio.block_on(resume_typical(runtime, &loaded));
        let resumed = started.elapsed();
        let _ = std::fs::remove_file(&plain);
        let _ = std::fs::remove_file(&synced_path);
        if round < 10 {
            continue; // warm-up
        }
        for (samples, value) in m.iter_mut().zip([
            micros(capture),
            micros(encoded),
            micros(capture + saved),
            micros(capture + synced),
            micros(resumed),
            bytes.len() as f64,
            suspended.memory_bytes() as f64,
        ]) {
            samples.push(value);
        }
    }
    let [
        capture,
        encode,
        save,
        save_fsync,
        restore_resume,
        size,
        memory,
    ] = m.map(Samples::new);
    Suspend {
        capture,
        encode,
        save,
        save_fsync,
        restore_resume,
        size,
        memory,
    }
}

/// What [`many`] measured.
#[derive(Debug, Clone)]
pub struct Many {
    /// Evals parked and saved.
    pub parked: usize,
    /// Park + save + write, per eval, in µs.
    pub per_eval: Samples,
    /// The process's resident memory before and after, in bytes.
    pub rss_before: u64,
    pub rss_after: u64,
    /// Bytes written to the directory.
    pub disk: u64,
    /// A trivial eval's time with all of them parked, in µs.
    pub trivial: Samples,
}

/// The process's resident memory (VmRSS), in bytes.
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// Parks `n` typical evals, one after another, each saved to its own file in `dir` (no
/// fsync) and dropped from memory — as a server spilling waiting scripts to its local store
/// does — then times trivial evals with all of them waiting.
pub fn many(runtime: &Runtime, n: usize, dir: &Path) -> Many {
    let tokio = tokio_current();
    let dir = dir.join(format!("codemode-bench-parked-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating the directory");
    let rss_before = rss();
    let mut per_eval = Vec::with_capacity(n);
    let mut disk = 0u64;
    for i in 0..n {
        let started = Instant::now();
        let suspended = tokio.block_on(park_typical(runtime));
        let bytes = suspended.save();
        write_file(&dir.join(i.to_string()), &bytes, false);
        per_eval.push(started.elapsed().as_secs_f64() * 1e6);
        disk += bytes.len() as u64;
    }
    let rss_after = rss();
    let options = eval_options();
    let trivial: Vec<f64> = (0..1000)
        .map(|_| {
            let started = Instant::now();
            let outcome = tokio.block_on(runtime.eval(workloads::TRIVIAL, &options, &Human));
            assert!(outcome.ok, "{:?}", outcome.error);
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    Many {
        parked: n,
        per_eval: Samples::new(per_eval),
        rss_before,
        rss_after,
        disk,
        trivial: Samples::new(trivial),
    }
}

/// Where the bench writes its file: `$CODEMODE_BENCH_DIR`, else the temporary directory.
fn bench_dir() -> PathBuf {
    std::env::var_os("CODEMODE_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
}

/// The section's figures.
///
/// # Errors
/// When the runtime cannot be built.
pub(crate) fn figures(options: &BenchOptions) -> Result<Vec<Figure>, String> {
    let runtime = options.runtime(runtime_config(8))?;
    let dir = bench_dir();
    let s = suspend(&runtime, options.eval_samples.min(MAX_SAMPLES), &dir);
    let where_ = format!("a new file in {}", dir.display());
    let save = s.save.median();
    let fsync = s.save_fsync.median();
    let resume = s.restore_resume.median();
    let size = s.size.median() / 1024.0;
    // A full run parks 100,000 (the target's count); quick and tiny runs as many as their
    // `suspended` count.
    let parked = match options.suspended {
        n if n >= 1000 => n.saturating_mul(100),
        n => n,
    };
    let m = many(&runtime, parked, &dir);
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let rss_after = mib(m.rss_after);
    let disk = mib(m.disk) / 1024.0;
    Ok(vec![
        Figure::new(
            "suspend",
            format!("RSS with {} evals parked in the store", m.parked),
            rss_after,
            "MiB",
        )
        .target("≤ 512 MiB with 100,000", rss_after <= 512.0)
        .note(format!(
            "{:.0} MiB before parking; park + save + write {:.0} µs p50 per eval",
            mib(m.rss_before),
            m.per_eval.median()
        )),
        Figure::new(
            "suspend",
            format!("disk used by {} parked evals", m.parked),
            disk,
            "GiB",
        )
        .target("≤ 8 GiB with 100,000", disk <= 8.0),
        Figure::new(
            "suspend",
            format!("trivial eval with {} evals parked", m.parked),
            m.trivial.median(),
            "µs",
        )
        .p99(m.trivial.percentile(99.0))
        .note("new evals meanwhile: compare with section trivial"),
        Figure::new("suspend", "save a parked eval (no fsync)", save, "µs")
            .p99(s.save.percentile(99.0))
            .target("≤ 200 µs", save <= 200.0)
            .note(format!(
                "capture {:.0} µs + encode {:.0} µs + write {where_}",
                s.capture.median(),
                s.encode.median()
            )),
        Figure::new("suspend", "save a parked eval, fsynced", fsync, "µs")
            .p99(s.save_fsync.percentile(99.0))
            .target("≤ 200 µs", fsync <= 200.0)
            .note(format!("the same, then fsync of {where_}")),
        Figure::new("suspend", "restore + resume to the end", resume, "µs")
            .p99(s.restore_resume.percentile(99.0))
            .target("≤ 300 µs", resume <= 300.0)
            .note(
                "read the file, load, fresh instance, write the pages, deliver the answer, finish",
            ),
        Figure::new("suspend", "saved size", size, "KiB")
            .target("≤ 64 KiB", size <= 64.0)
            .note(format!(
                "{:.0} KiB of pages differ from the image (XORed with it, packed in 4-byte words, zstd -3)",
                s.memory.median() / 1024.0
            )),
    ])
}
