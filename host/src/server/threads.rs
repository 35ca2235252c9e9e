//! The threads evals run on: one thread per running eval, as tokio's blocking pool gives, but
//! handed out last-idle-first through a stack of parked threads, each woken on its own.
//!
//! Why not `spawn_blocking`: every hand-off to tokio's blocking pool locks one mutex that the
//! pool's threads also take each time they go idle, and wakes whichever thread the condition
//! variable picks. At 64 keep-alive HTTP clients on 2 cores (~70 pool threads) that mutex was
//! contended on every eval (`parking_lot`'s `lock_slow` spinning through `sched_yield`, ~10% of
//! the server's CPU in `perf`), and the work rotated over every thread, each with its own cold
//! stack and malloc arena. Here the lock guards only a push or a pop, and the thread that went
//! idle last (the warmest) takes the next eval.
//!
//! Fairness is unchanged: an eval never waits for another one to end. When no thread is idle a
//! new one starts, so a client flooding busy scripts cannot keep other clients' evals from
//! starting (`tests/adversarial/http.rs`, `busy_scripts_do_not_stall_other_requests`); the OS
//! shares the cores between them. A thread idle for [`EvalThreads::keep_alive`] ends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::Thread;
use std::time::{Duration, Instant};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// How long an idle eval thread waits for work before it ends (as tokio's blocking pool).
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// A pool of eval threads that grows on demand (see the module docs).
pub struct EvalThreads {
    shared: Arc<Shared>,
}

struct Shared {
    /// Idle threads, the most recently idle last.
    idle: Mutex<Vec<Arc<Worker>>>,
    keep_alive: Duration,
    /// Threads started and not yet ended.
    live: AtomicUsize,
}

/// One idle thread's mailbox: a job is put here, then the thread is unparked.
struct Worker {
    job: Mutex<Option<Job>>,
    thread: Thread,
}

impl Default for EvalThreads {
    fn default() -> Self {
        EvalThreads::new(DEFAULT_KEEP_ALIVE)
    }
}

impl EvalThreads {
    /// A pool whose idle threads end after `keep_alive` without work.
    pub fn new(keep_alive: Duration) -> Self {
        EvalThreads {
            shared: Arc::new(Shared {
                idle: Mutex::new(Vec::new()),
                keep_alive,
                live: AtomicUsize::new(0),
            }),
        }
    }

    /// How long an idle thread waits for work before it ends.
    pub fn keep_alive(&self) -> Duration {
        self.shared.keep_alive
    }

    /// Runs `job` at once: on the thread that went idle last, else on a new thread. A panic in
    /// `job` ends the job, not the thread. Fails only when the OS refuses a new thread.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        let job: Job = Box::new(job);
        let idle = self.shared.lock().pop();
        match idle {
            Some(worker) => {
                *worker.lock() = Some(job);
                worker.thread.unpark();
                Ok(())
            }
            None => {
                let shared = self.shared.clone();
                self.shared.live.fetch_add(1, Ordering::Relaxed);
                let started = std::thread::Builder::new()
                    .name("codemode-eval".into())
                    .spawn(move || {
                        shared.work(job);
                        shared.live.fetch_sub(1, Ordering::Relaxed);
                    });
                if started.is_err() {
                    self.shared.live.fetch_sub(1, Ordering::Relaxed);
                }
                started.map(drop)
            }
        }
    }

    /// Threads waiting for work now.
    pub fn idle(&self) -> usize {
        self.shared.lock().len()
    }

    /// Threads running an eval or waiting for one.
    pub fn threads(&self) -> usize {
        self.shared.live.load(Ordering::Relaxed)
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Vec<Arc<Worker>>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A thread's life: its first job, then each job a spawner hands it, until it has been idle
    /// for `keep_alive`.
    fn work(&self, first: Job) {
        let worker = Arc::new(Worker {
            job: Mutex::new(None),
            thread: std::thread::current(),
        });
        let mut job = first;
        loop {
            // The job's own panic was reported by the panic hook; the thread serves on.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            self.lock().push(worker.clone());
            match self.wait(&worker) {
                Some(next) => job = next,
                None => return,
            }
        }
    }

    /// Waits on the worker's mailbox. `None`: idle for `keep_alive` and taken off the idle
    /// stack, so no job can arrive any more.
    fn wait(&self, worker: &Arc<Worker>) -> Option<Job> {
        let deadline = Instant::now() + self.keep_alive;
        loop {
            if let Some(job) = worker.lock().take() {
                return Some(job);
            }
            let now = Instant::now();
            if now < deadline {
                std::thread::park_timeout(deadline - now);
                continue;
            }
            let mut idle = self.lock();
            if let Some(at) = idle.iter().position(|w| Arc::ptr_eq(w, worker)) {
                idle.remove(at);
                return None;
            }
            // A spawner popped this worker and is about to hand it a job: wait for it.
            drop(idle);
            loop {
                if let Some(job) = worker.lock().take() {
                    return Some(job);
                }
                std::thread::park();
            }
        }
    }
}

impl Worker {
    fn lock(&self) -> MutexGuard<'_, Option<Job>> {
        self.job.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Waits until `pool` has `n` idle threads (threads go idle just after their job).
    fn until_idle(pool: &EvalThreads, n: usize) {
        while pool.idle() != n {
            std::thread::yield_now();
        }
    }

    #[test]
    fn an_idle_thread_takes_the_next_job() {
        let pool = EvalThreads::default();
        let (tx, rx) = mpsc::channel();
        let first = tx.clone();
        pool.spawn(move || first.send(std::thread::current().id()).unwrap())
            .unwrap();
        let a = rx.recv().unwrap();
        until_idle(&pool, 1);
        pool.spawn(move || tx.send(std::thread::current().id()).unwrap())
            .unwrap();
        assert_eq!(rx.recv().unwrap(), a);
        until_idle(&pool, 1);
        assert_eq!(pool.threads(), 1);
    }

    #[test]
    fn no_job_waits_for_a_running_one() {
        let pool = EvalThreads::default();
        let (release, blocked) = mpsc::channel::<()>();
        let (started, started_rx) = mpsc::channel();
        let s = started.clone();
        pool.spawn(move || {
            s.send("busy").unwrap();
            blocked.recv().unwrap();
        })
        .unwrap();
        assert_eq!(started_rx.recv().unwrap(), "busy");
        // The first thread is busy until released: the second job gets a thread of its own.
        pool.spawn(move || started.send("second").unwrap()).unwrap();
        assert_eq!(started_rx.recv().unwrap(), "second");
        release.send(()).unwrap();
        until_idle(&pool, 2);
        assert_eq!(pool.threads(), 2);
    }

    #[test]
    fn the_thread_idle_last_is_used_first() {
        let pool = EvalThreads::default();
        let (release_a, wait_a) = mpsc::channel::<()>();
        let (ids, ids_rx) = mpsc::channel();
        let a_ids = ids.clone();
        pool.spawn(move || {
            wait_a.recv().unwrap();
            a_ids.send(std::thread::current().id()).unwrap();
        })
        .unwrap();
        let (release_b, wait_b) = mpsc::channel::<()>();
        let b_ids = ids.clone();
        pool.spawn(move || {
            wait_b.recv().unwrap();
            b_ids.send(std::thread::current().id()).unwrap();
        })
        .unwrap();
        release_a.send(()).unwrap();
        let a = ids_rx.recv().unwrap();
        until_idle(&pool, 1);
        release_b.send(()).unwrap();
        let b = ids_rx.recv().unwrap();
        until_idle(&pool, 2);
        assert_ne!(a, b);
        pool.spawn(move || ids.send(std::thread::current().id()).unwrap())
            .unwrap();
        assert_eq!(ids_rx.recv().unwrap(), b);
    }

    #[test]
    fn a_panicking_job_leaves_its_thread_serving() {
        let pool = EvalThreads::default();
        pool.spawn(|| panic!("a job's panic")).unwrap();
        until_idle(&pool, 1);
        let (tx, rx) = mpsc::channel();
        pool.spawn(move || tx.send(2).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), 2);
    }

    #[test]
    fn idle_threads_end_after_the_keep_alive() {
        let pool = EvalThreads::new(Duration::from_millis(1));
        let (tx, rx) = mpsc::channel();
        let first = tx.clone();
        pool.spawn(move || first.send(1).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), 1);
        // The thread goes idle, then ends and leaves the stack.
        while pool.threads() != 0 {
            std::thread::yield_now();
        }
        assert_eq!(pool.idle(), 0);
        pool.spawn(move || tx.send(2).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), 2);
    }
}
