//! The threads scripts longer than [`ON_THIS_THREAD_BYTES`](super::ON_THIS_THREAD_BYTES) are
//! parsed on: oxc's parser and the call-site visitor recurse once per nesting level, so each
//! thread has a [`PREVIEW_STACK_BYTES`](super::PREVIEW_STACK_BYTES) stack (reserved address
//! space: only a deep parse touches much of it).
//!
//! Starting such a thread for each parse (`clone3`, `mmap` of the stack, then `munmap` and its
//! TLB shootdown across the cores) cost more than a trivial eval under HTTP load, so threads are
//! started once and kept, as the server's eval threads are: idle threads wait on a stack, and the
//! one idle last (the warmest) takes the next parse.
//!
//! No parse waits for another: when no thread is idle a new one starts for the parse, so a slow
//! (pathological) parse holds up nobody but its own eval. There is no queue to bound: a parse
//! is handed to a thread at once, and the threads are as many as the parses in flight at the
//! busiest moment (each caller waits for its own parse), each ending once idle for
//! [`KEEP_ALIVE`].
//!
//! A thread that parsed a script of more than [`RETIRE_AFTER_BYTES`] ends after it: such a parse
//! may have touched tens of MiB of the stack (a nesting level takes a byte of source and up to
//! ~2 KiB of stack), which a kept thread would keep resident. Up to that size a kept thread's
//! stack holds at most a few MiB.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, mpsc};
use std::thread::Thread;
use std::time::{Duration, Instant};

use super::PREVIEW_STACK_BYTES;

/// How long an idle parse thread waits for a parse before it ends.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// Scripts longer than this are parsed on a thread that ends after the parse (see the module
/// docs): model-written scripts are mostly shorter, and from this size on the parse costs more
/// than starting its thread.
pub(crate) const RETIRE_AFTER_BYTES: usize = 4 * 1024;

/// The process's parse threads.
pub(crate) fn parse_threads() -> &'static ParseThreads {
    static THREADS: LazyLock<ParseThreads> =
        LazyLock::new(|| ParseThreads::new(PREVIEW_STACK_BYTES, KEEP_ALIVE));
    &THREADS
}

/// A job, which returns how to deliver its result, and whether its thread ends after it. The
/// thread goes idle before it delivers: a caller that gets its result finds the thread ready
/// for its next parse.
type Job = (Box<dyn FnOnce() -> Deliver + Send + 'static>, bool);
type Deliver = Box<dyn FnOnce() + Send + 'static>;

/// Threads with a large stack, started on demand and kept (see the module docs).
pub(crate) struct ParseThreads {
    shared: Arc<Shared>,
}

struct Shared {
    /// Idle threads, the most recently idle last.
    idle: Mutex<Vec<Arc<Worker>>>,
    stack_bytes: usize,
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

impl ParseThreads {
    /// Threads with `stack_bytes` of stack, ending once idle for `keep_alive`.
    pub(crate) fn new(stack_bytes: usize, keep_alive: Duration) -> Self {
        ParseThreads {
            shared: Arc::new(Shared {
                idle: Mutex::new(Vec::new()),
                stack_bytes,
                keep_alive,
                started: AtomicUsize::new(0),
                live: AtomicUsize::new(0),
            }),
        }
    }

    /// Runs `job` on the thread that went idle last, else on a new thread, and waits for its
    /// result; the thread ends afterwards when `retire`. `Ok(Err(_))`: the job panicked (the
    /// thread serves on); `Err`: no thread was idle and the OS refused a new one.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        retire: bool,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> std::io::Result<std::thread::Result<T>> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.spawn((
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
            .unwrap_or_else(|_| Err(Box::new("the parse thread ended before the parse"))))
    }

    fn spawn(&self, job: Job) -> std::io::Result<()> {
        let idle = self.shared.lock().pop();
        if let Some(worker) = idle {
            *worker.lock() = Some(job);
            worker.thread.unpark();
            return Ok(());
        }
        let shared = self.shared.clone();
        self.shared.live.fetch_add(1, Ordering::Relaxed);
        let started = std::thread::Builder::new()
            .name("codemode-parse".into())
            .stack_size(self.shared.stack_bytes)
            .spawn(move || {
                shared.work(job);
                shared.live.fetch_sub(1, Ordering::Relaxed);
            });
        match started {
            Ok(_) => {
                self.shared.started.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                self.shared.live.fetch_sub(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    /// Threads started so far.
    #[cfg(test)]
    pub(crate) fn started(&self) -> usize {
        self.shared.started.load(Ordering::Relaxed)
    }

    /// Threads parsing or waiting for a parse now.
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.shared.live.load(Ordering::Relaxed)
    }

    /// Threads waiting for a parse now.
    #[cfg(test)]
    pub(crate) fn idle(&self) -> usize {
        self.shared.lock().len()
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

    #[test]
    fn one_kept_thread_runs_one_parse_after_another() {
        let threads = ParseThreads::new(1 << 20, KEEP_ALIVE);
        let first = threads
            .run(false, || std::thread::current().id())
            .unwrap()
            .unwrap();
        // A thread is idle again by the time its caller has the result.
        for round in 0..100 {
            let id = threads
                .run(false, || std::thread::current().id())
                .unwrap()
                .unwrap();
            assert_eq!(id, first, "round {round}");
        }
        assert_eq!((threads.started(), threads.live()), (1, 1));
    }

    #[test]
    fn no_parse_waits_for_a_running_one() {
        let threads = Arc::new(ParseThreads::new(1 << 20, KEEP_ALIVE));
        let (started_tx, started) = mpsc::channel();
        let (release, blocked) = mpsc::channel::<()>();
        let slow = {
            let threads = threads.clone();
            std::thread::spawn(move || {
                threads
                    .run(false, move || {
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
        assert_eq!(threads.run(false, || "fast").unwrap().unwrap(), "fast");
        assert_eq!((threads.started(), threads.idle()), (2, 1));
        release.send(()).unwrap();
        assert_eq!(slow.join().unwrap(), "slow");
        assert_eq!((threads.started(), threads.idle()), (2, 2));
    }

    #[test]
    fn a_retiring_parse_ends_its_thread_and_a_panic_does_not() {
        let threads = ParseThreads::new(1 << 20, KEEP_ALIVE);
        let panicked = threads.run(false, || -> u8 { panic!("a parser bug") });
        assert!(matches!(panicked, Ok(Err(_))));
        assert_eq!(threads.idle(), 1);
        assert_eq!(threads.run(true, || 2).unwrap().unwrap(), 2);
        // The retiring parse took the idle thread, which ended after it.
        while threads.live() != 0 {
            std::thread::yield_now();
        }
        assert_eq!((threads.idle(), threads.started()), (0, 1));
        assert_eq!(threads.run(false, || 3).unwrap().unwrap(), 3);
        assert_eq!(threads.started(), 2);
    }

    #[test]
    fn idle_threads_end_after_the_keep_alive() {
        let threads = ParseThreads::new(1 << 20, Duration::from_millis(1));
        assert_eq!(threads.run(false, || 1).unwrap().unwrap(), 1);
        while threads.live() != 0 {
            std::thread::yield_now();
        }
        assert_eq!(threads.idle(), 0);
        assert_eq!(threads.run(false, || 2).unwrap().unwrap(), 2);
        assert_eq!(threads.started(), 2);
    }
}
