//! [`ThreadPool`]: threads started on demand and kept, handed out last-idle-first, for work that
//! must not run on an async executor's workers — evals above all (see [`crate::Runtime::eval`]).
//!
//! One thread per job in flight, as tokio's blocking pool gives, but without its shared queue:
//! every hand-off to `spawn_blocking` locks one mutex that the pool's threads also take each
//! time they go idle, and wakes whichever thread the condition variable picks. At 64 keep-alive
//! HTTP clients on 2 cores (~70 pool threads) that mutex was contended on every eval
//! (`parking_lot`'s `lock_slow` spinning through `sched_yield`, ~10% of the server's CPU in
//! `perf`), and the work rotated over every thread, each with its own cold stack and malloc
//! arena. Here idle threads wait on a stack, each parked on its own: the lock guards only a push
//! or a pop, and the thread that went idle last (the warmest) takes the next job.
//!
//! No job waits for another: when no thread is idle a new one starts, so a client flooding busy
//! scripts cannot keep other clients' evals from starting (`tests/adversarial/http.rs`,
//! `busy_scripts_do_not_stall_other_requests`), and a slow parse holds up nobody but its own
//! eval; the OS shares the cores between the threads. There is no queue to bound: the threads
//! are as many as the jobs in flight at the busiest moment, each ending once idle for
//! [`ThreadPoolBuilder::keep_alive`].
//!
//! Starting a thread per job instead (`clone3`, `mmap` of the stack, then `munmap` and its TLB
//! shootdown across the cores) cost more than a trivial eval under HTTP load; a kept thread
//! costs the memory its stack has touched, which is why a job that may have touched much of a
//! large stack can end its thread ([`ThreadPool::run_retiring`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// A job, which returns how to deliver its result, and whether its thread ends after it. The
/// thread goes idle before it delivers: a caller of [`ThreadPool::run`] that gets its result
/// finds the thread ready for its next job.
type Job = (Box<dyn FnOnce() -> Deliver + Send + 'static>, bool);
type Deliver = Box<dyn FnOnce() + Send + 'static>;

/// Threads that run jobs at once, started on demand, kept while busy, and reused
/// last-idle-first (see the module docs). Clones share the same threads.
///
/// Evals on a tokio service: each eval on a thread of its own, driven by the service's
/// runtime, so that busy scripts never occupy the async workers (which is how
/// `codemode serve` runs them).
///
/// ```
/// use std::time::Duration;
/// use codemode_runtime::{EvalOptions, NoTools, Runtime, RuntimeConfig, ThreadPool};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::new(&RuntimeConfig::default())?;
/// let threads = ThreadPool::builder()
///     .name("my-evals")
///     .keep_alive(Duration::from_secs(30))
///     .build();
/// let tokio = tokio::runtime::Runtime::new()?;
/// let outcome = tokio.block_on(async {
///     let (done, outcome) = tokio::sync::oneshot::channel();
///     let handle = tokio::runtime::Handle::current();
///     threads.spawn(move || {
///         let outcome = handle.block_on(runtime.eval("6 * 7", &EvalOptions::default(), &NoTools));
///         let _ = done.send(outcome);
///     })?;
///     // This task waits without holding its worker: others run meanwhile.
///     Ok::<_, std::io::Error>(outcome.await.expect("the eval's thread sends its outcome"))
/// })?;
/// assert_eq!(outcome.result, serde_json::json!(42));
///
/// // A job whose result the caller waits for, here on a thread with a larger stack.
/// let deep = ThreadPool::builder().stack_size(64 << 20).build();
/// assert_eq!(deep.run(|| 6 * 7)?.expect("no panic"), 42);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ThreadPool {
    shared: Arc<Shared>,
}

/// The settings of a [`ThreadPool`], from [`ThreadPool::builder`]. Setters take and return
/// `&mut Self`, so they chain.
#[derive(Debug, Clone)]
pub struct ThreadPoolBuilder {
    name: String,
    stack_size: Option<usize>,
    keep_alive: Duration,
}

struct Shared {
    /// Idle threads, the most recently idle last.
    idle: Mutex<Vec<Arc<Worker>>>,
    name: String,
    stack_size: Option<usize>,
    keep_alive: Duration,
    /// Threads started so far.
    started: AtomicUsize,
    /// Threads started and not yet ended.
    live: AtomicUsize,
}

/// One idle thread's mailbox: a job is put here, then the thread is unparked.
struct Worker {
    job: Mutex<Option<Job>>,
    thread: Thread,
}

impl Default for ThreadPoolBuilder {
    fn default() -> Self {
        ThreadPoolBuilder {
            name: "codemode-eval".into(),
            stack_size: None,
            keep_alive: ThreadPool::DEFAULT_KEEP_ALIVE,
        }
    }
}

impl ThreadPoolBuilder {
    /// The threads' name (as `ps`, `top -H`, `perf` and panic messages show it). Default
    /// `codemode-eval`.
    pub fn name(&mut self, name: &str) -> &mut Self {
        self.name = name.into();
        self
    }

    /// Each thread's stack, in bytes: reserved address space, of which only what a job touches
    /// becomes resident. Default: the standard library's (2 MiB unless `RUST_MIN_STACK` says
    /// otherwise), enough for an eval, whose guest runs on its own
    /// [`crate::RuntimeConfig::max_wasm_stack`] within it.
    pub fn stack_size(&mut self, bytes: usize) -> &mut Self {
        self.stack_size = Some(bytes);
        self
    }

    /// How long an idle thread waits for a job before it ends. Default
    /// [`ThreadPool::DEFAULT_KEEP_ALIVE`] (10 s).
    pub fn keep_alive(&mut self, keep_alive: Duration) -> &mut Self {
        self.keep_alive = keep_alive;
        self
    }

    /// A pool with these settings. No thread starts until the first job.
    pub fn build(&self) -> ThreadPool {
        ThreadPool {
            shared: Arc::new(Shared {
                idle: Mutex::new(Vec::new()),
                name: self.name.clone(),
                stack_size: self.stack_size,
                keep_alive: self.keep_alive,
                started: AtomicUsize::new(0),
                live: AtomicUsize::new(0),
            }),
        }
    }
}

impl Default for ThreadPool {
    fn default() -> Self {
        ThreadPool::builder().build()
    }
}

impl std::fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadPool")
            .field("name", &self.shared.name)
            .field("stack_size", &self.shared.stack_size)
            .field("keep_alive", &self.shared.keep_alive)
            .field("threads", &self.threads())
            .finish_non_exhaustive()
    }
}

impl ThreadPool {
    /// How long an idle thread waits for work before it ends, by default (as tokio's blocking
    /// pool).
    pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(10);

    /// The settings of a new pool, each at its default.
    pub fn builder() -> ThreadPoolBuilder {
        ThreadPoolBuilder::default()
    }

    /// How long an idle thread waits for work before it ends.
    pub fn keep_alive(&self) -> Duration {
        self.shared.keep_alive
    }

    /// Runs `job` at once, without waiting for it: on the thread that went idle last, else on
    /// a new thread. A panic in `job` ends the job (the panic hook reports it), not the thread.
    ///
    /// # Errors
    /// Only when no thread is idle and the OS refuses a new one; `job` is then dropped unrun.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        self.start((
            Box::new(move || {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                // Nothing to deliver (a closure without captures: no allocation).
                Box::new(|| {})
            }),
            false,
        ))
    }

    /// Runs `job` on the thread that went idle last, else on a new thread, and waits for its
    /// result; the thread is idle again by the time the result is returned. `Ok(Err(_))`: the
    /// job panicked (the thread serves on).
    ///
    /// # Errors
    /// Only when no thread is idle and the OS refuses a new one.
    pub fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> std::io::Result<std::thread::Result<T>> {
        self.run_then(false, job)
    }

    /// [`ThreadPool::run`], after which the thread ends instead of waiting for the next job:
    /// for a job that may have touched much of a large stack, which a kept thread would keep
    /// resident.
    ///
    /// # Errors
    /// As [`ThreadPool::run`].
    pub fn run_retiring<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> std::io::Result<std::thread::Result<T>> {
        self.run_then(true, job)
    }

    /// Threads waiting for work now.
    pub fn idle(&self) -> usize {
        self.shared.lock().len()
    }

    /// Threads running a job or waiting for one now.
    pub fn threads(&self) -> usize {
        self.shared.live.load(Ordering::Relaxed)
    }

    /// Threads started since the pool was built.
    pub fn started(&self) -> usize {
        self.shared.started.load(Ordering::Relaxed)
    }

    fn run_then<T: Send + 'static>(
        &self,
        retire: bool,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> std::io::Result<std::thread::Result<T>> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.start((
            Box::new(move || {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                Box::new(move || {
                    let _ = tx.send(result);
                })
            }),
            retire,
        ))?;
        // The job always sends (its panic is caught); a dropped sender would mean it never ran.
        Ok(rx
            .recv()
            .unwrap_or_else(|_| Err(Box::new("the pool's thread ended before the job"))))
    }

    /// Hands `job` to the thread that went idle last, else to a new thread.
    fn start(&self, job: Job) -> std::io::Result<()> {
        let idle = self.shared.lock().pop();
        if let Some(worker) = idle {
            *worker.lock() = Some(job);
            worker.thread.unpark();
            return Ok(());
        }
        let shared = self.shared.clone();
        self.shared.live.fetch_add(1, Ordering::Relaxed);
        // Counted before the thread runs its job: whoever sees the job's effects sees it counted.
        self.shared.started.fetch_add(1, Ordering::Relaxed);
        let mut builder = std::thread::Builder::new().name(self.shared.name.clone());
        if let Some(bytes) = self.shared.stack_size {
            builder = builder.stack_size(bytes);
        }
        let started = builder.spawn(move || {
            shared.work(job);
            shared.live.fetch_sub(1, Ordering::Relaxed);
        });
        match started {
            Ok(_) => Ok(()),
            Err(e) => {
                self.shared.live.fetch_sub(1, Ordering::Relaxed);
                self.shared.started.fetch_sub(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Vec<Arc<Worker>>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A thread's life: its first job, then each job handed to it, until one retires it or it
    /// has been idle for `keep_alive`.
    fn work(&self, first: Job) {
        let worker = Arc::new(Worker {
            job: Mutex::new(None),
            thread: std::thread::current(),
        });
        let (mut job, mut retire) = first;
        loop {
            // Never unwinds: each job catches its own panic.
            let deliver = job();
            if retire {
                deliver();
                return;
            }
            self.lock().push(worker.clone());
            deliver();
            match self.wait(&worker) {
                Some(next) => (job, retire) = next,
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

    /// Waits until `pool` has `n` idle threads (threads go idle just after their job).
    fn until_idle(pool: &ThreadPool, n: usize) {
        while pool.idle() != n {
            std::thread::yield_now();
        }
    }

    /// A pool as the preview's parse threads: `1 MiB` stacks, `keep_alive`.
    fn parse_pool(keep_alive: Duration) -> ThreadPool {
        ThreadPool::builder()
            .name("codemode-parse")
            .stack_size(1 << 20)
            .keep_alive(keep_alive)
            .build()
    }

    // Jobs spawned without waiting (as the server's evals).

    #[test]
    fn an_idle_thread_takes_the_next_job() {
        let pool = ThreadPool::default();
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
        let pool = ThreadPool::default();
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
        let pool = ThreadPool::default();
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
        let pool = ThreadPool::default();
        pool.spawn(|| panic!("a job's panic")).unwrap();
        until_idle(&pool, 1);
        let (tx, rx) = mpsc::channel();
        pool.spawn(move || tx.send(2).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), 2);
    }

    #[test]
    fn idle_threads_end_after_the_keep_alive() {
        let pool = ThreadPool::builder()
            .keep_alive(Duration::from_millis(1))
            .build();
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

    // Jobs whose caller waits for the result (as the preview's parses).

    #[test]
    fn one_kept_thread_runs_one_parse_after_another() {
        let threads = parse_pool(ThreadPool::DEFAULT_KEEP_ALIVE);
        let first = threads
            .run(|| std::thread::current().id())
            .unwrap()
            .unwrap();
        // A thread is idle again by the time its caller has the result.
        for round in 0..100 {
            let id = threads
                .run(|| std::thread::current().id())
                .unwrap()
                .unwrap();
            assert_eq!(id, first, "round {round}");
        }
        assert_eq!((threads.started(), threads.threads()), (1, 1));
    }

    #[test]
    fn no_parse_waits_for_a_running_one() {
        let threads = Arc::new(parse_pool(ThreadPool::DEFAULT_KEEP_ALIVE));
        let (started_tx, started) = mpsc::channel();
        let (release, blocked) = mpsc::channel::<()>();
        let slow = {
            let threads = threads.clone();
            std::thread::spawn(move || {
                threads
                    .run(move || {
                        started_tx.send(()).unwrap();
                        blocked.recv().unwrap();
                        "slow"
                    })
                    .unwrap()
                    .unwrap()
            })
        };
        started.recv().unwrap();
        // The first parse holds its thread until it is released, after this one: this one
        // gets a thread of its own (were it queued behind the first, this would never return).
        assert_eq!(threads.run(|| "fast").unwrap().unwrap(), "fast");
        until_idle(&threads, 1);
        assert_eq!((threads.started(), threads.idle()), (2, 1));
        release.send(()).unwrap();
        assert_eq!(slow.join().unwrap(), "slow");
        until_idle(&threads, 2);
        assert_eq!((threads.started(), threads.idle()), (2, 2));
    }

    #[test]
    fn a_retiring_parse_ends_its_thread_and_a_panic_does_not() {
        let threads = parse_pool(ThreadPool::DEFAULT_KEEP_ALIVE);
        let panicked = threads.run(|| -> u8 { panic!("a parser bug") });
        assert!(matches!(panicked, Ok(Err(_))));
        until_idle(&threads, 1);
        assert_eq!(threads.idle(), 1);
        assert_eq!(threads.run_retiring(|| 2).unwrap().unwrap(), 2);
        // The retiring parse took the idle thread, which ended after it.
        while threads.threads() != 0 {
            std::thread::yield_now();
        }
        assert_eq!((threads.idle(), threads.started()), (0, 1));
        assert_eq!(threads.run(|| 3).unwrap().unwrap(), 3);
        assert_eq!(threads.started(), 2);
    }

    #[test]
    fn idle_parse_threads_end_after_the_keep_alive() {
        let threads = parse_pool(Duration::from_millis(1));
        assert_eq!(threads.run(|| 1).unwrap().unwrap(), 1);
        while threads.threads() != 0 {
            std::thread::yield_now();
        }
        assert_eq!(threads.idle(), 0);
        assert_eq!(threads.run(|| 2).unwrap().unwrap(), 2);
        assert_eq!(threads.started(), 2);
    }

    #[test]
    fn threads_carry_the_pools_name() {
        let named = parse_pool(ThreadPool::DEFAULT_KEEP_ALIVE);
        let name = named
            .run(|| std::thread::current().name().map(str::to_string))
            .unwrap()
            .unwrap();
        assert_eq!(name.as_deref(), Some("codemode-parse"));
        let default = ThreadPool::default()
            .run(|| std::thread::current().name().map(str::to_string))
            .unwrap()
            .unwrap();
        assert_eq!(default.as_deref(), Some("codemode-eval"));
    }
}
