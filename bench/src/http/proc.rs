//! What a server process holds, sampled from `/proc/PID` while the load runs: resident memory
//! and open file descriptors.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One sample of a process.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ProcSample {
    /// Seconds since sampling started.
    pub at_s: f64,
    /// Resident set size (`VmRSS`), in KiB.
    pub rss_kib: u64,
    /// Entries of `/proc/PID/fd`.
    pub fds: usize,
}

/// Reads `/proc/PID` once; `None` when the process is gone (or not on Linux).
pub fn sample(pid: u32) -> Option<(u64, usize)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count();
    Some((rss, fds))
}

/// Samples a process on a thread of its own, every `every`, until [`Sampler::finish`].
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<ProcSample>>,
}

impl Sampler {
    /// Starts sampling `pid`.
    pub fn start(pid: u32, every: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let mut samples = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                if let Some((rss_kib, fds)) = sample(pid) {
                    samples.push(ProcSample {
                        at_s: started.elapsed().as_secs_f64(),
                        rss_kib,
                        fds,
                    });
                }
                // Sleep in short steps so that `finish` returns at once.
                let until = Instant::now() + every;
                while Instant::now() < until && !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20).min(every));
                }
            }
            samples
        });
        Sampler { stop, thread }
    }

    /// Stops sampling and returns the samples, oldest first.
    pub fn finish(self) -> Vec<ProcSample> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_memory_and_descriptors() {
        let (rss, fds) = sample(std::process::id()).expect("/proc/self is readable");
        assert!(rss > 0);
        // stdin, stdout, stderr at least, and the directory being read.
        assert!(fds >= 3, "{fds}");
        assert_eq!(sample(u32::MAX), None);
    }
}
