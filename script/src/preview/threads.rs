//! The threads scripts longer than [`ON_THIS_THREAD_BYTES`](super::ON_THIS_THREAD_BYTES) are
//! parsed on: a [`ThreadPool`] whose threads have a
//! [`PREVIEW_STACK_BYTES`](super::PREVIEW_STACK_BYTES) stack, since oxc's parser and the
//! call-site visitor recurse once per nesting level (reserved address space: only a deep parse
//! touches much of it).
//!
//! Starting such a thread for each parse cost more than a trivial eval under HTTP load, so
//! threads are kept, as the server's eval threads are, and the one idle last takes the next
//! parse. No parse waits for another (a slow, pathological parse holds up nobody but its own
//! eval), and each thread ends once idle for [`KEEP_ALIVE`].
//!
//! A thread that parsed a script of more than [`RETIRE_AFTER_BYTES`] ends after it: such a parse
//! may have touched tens of MiB of the stack (a nesting level takes a byte of source and up to
//! ~2 KiB of stack), which a kept thread would keep resident. Up to that size a kept thread's
//! stack holds at most a few MiB.

use std::sync::LazyLock;
use std::time::Duration;

use codemode_runtime::ThreadPool;

use super::PREVIEW_STACK_BYTES;

/// How long an idle parse thread waits for a parse before it ends.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// Scripts longer than this are parsed on a thread that ends after the parse (see the module
/// docs): model-written scripts are mostly shorter, and from this size on the parse costs more
/// than starting its thread.
pub(crate) const RETIRE_AFTER_BYTES: usize = 4 * 1024;

/// The process's parse threads.
pub(crate) fn parse_threads() -> &'static ThreadPool {
    static THREADS: LazyLock<ThreadPool> = LazyLock::new(new_parse_threads);
    &THREADS
}

/// A pool with the parse threads' settings (the process's own is [`parse_threads`]).
pub(crate) fn new_parse_threads() -> ThreadPool {
    ThreadPool::builder()
        .name("codemode-parse")
        .stack_size(PREVIEW_STACK_BYTES)
        .keep_alive(KEEP_ALIVE)
        .build()
}

/// Runs `parse` on a parse thread, which ends afterwards when the script is longer than
/// [`RETIRE_AFTER_BYTES`]. `Ok(Err(_))`: the parse panicked (the thread serves on); `Err`: no
/// thread was idle and the OS refused a new one.
pub(crate) fn run<T: Send + 'static>(
    code_len: usize,
    parse: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<std::thread::Result<T>> {
    if code_len > RETIRE_AFTER_BYTES {
        parse_threads().run_retiring(parse)
    } else {
        parse_threads().run(parse)
    }
}
