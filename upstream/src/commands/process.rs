//! Running one command: no inherited environment, standard output read up to a bound, a bounded
//! tail of standard error, and every process it started killed on timeout, on too much output,
//! when the call is dropped (the eval was cancelled or timed out), and when the program exits
//! (so nothing it left in the background outlives the call).
//!
//! "Every process" includes those that left its process group or session (`setsid`, a double
//! fork): the program runs below a reaper of its own (`super::reaper`), their subreaper, which sweeps
//! them all when the program exits or when it is told to (SIGTERM; also when codemode dies).

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use codemode_config::CommandConfig;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The most bytes of standard error kept (its last ones): enough for a usage message or a
/// stack trace's end, bounded whatever the program writes.
pub(super) const STDERR_TAIL: usize = 4096;

/// A finished run.
pub(super) struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    /// The last [`STDERR_TAIL`] bytes of standard error.
    pub stderr_tail: Vec<u8>,
}

/// Why a run did not finish.
#[derive(Debug)]
pub(super) enum RunError {
    /// The program could not be started.
    Spawn(std::io::Error),
    /// It ran past its timeout.
    TimedOut(Duration),
    /// It wrote more than `maxOutput` bytes to standard output.
    TooMuchOutput(u64),
    /// Reading its output or waiting for it failed.
    Io(std::io::Error),
}

/// The command's reaper, told at most once to kill everything below it: by
/// [`kill`](Reaper::kill) or on drop, never once it has been waited for (its pid may then be
/// another process's).
struct Reaper {
    pid: libc::pid_t,
    done: AtomicBool,
}

impl Reaper {
    /// SIGTERM to the reaper: it kills the command's group and every process left below it,
    /// then exits.
    fn kill(&self) {
        if !self.done.swap(true, Ordering::SeqCst) {
            // SAFETY: kill only sends a signal, to our own child, not yet waited for.
            unsafe {
                libc::kill(self.pid, libc::SIGTERM);
            }
        }
    }

    /// It has exited and been waited for (after sweeping everything below it).
    fn exited(&self) {
        self.done.store(true, Ordering::SeqCst);
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs `program` with `argv` as `command` says (environment, cwd, timeout, output bound).
pub(super) async fn run(
    program: &Path,
    argv: &[String],
    command: &CommandConfig,
) -> Result<Finished, RunError> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(argv)
        .env_clear()
        .envs(&command.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Out of codemode's process group (a terminal's signals are codemode's to handle).
        .process_group(0)
        // Not SIGKILL on drop: the reaper must live to sweep (see `Reaper`); tokio reaps it.
        .kill_on_drop(false);
    if let Some(dir) = &command.cwd {
        cmd.current_dir(dir);
    }
    let parent = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
    // SAFETY: the hook runs between fork and exec, and `become_reaper` makes only
    // async-signal-safe system calls there (see `super::reaper`).
    unsafe {
        cmd.pre_exec(move || super::reaper::become_reaper(parent));
    }
    let mut child = cmd.spawn().map_err(RunError::Spawn)?;
    let pid = child
        .id()
        .and_then(|id| libc::pid_t::try_from(id).ok())
        .ok_or_else(|| RunError::Io(std::io::Error::other("the child has no pid")))?;
    let reaper = Reaper {
        pid,
        done: AtomicBool::new(false),
    };
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(RunError::Io(std::io::Error::other(
            "the child has no pipes",
        )));
    };
    let max_output = command.max_output;
    let work = async {
        let out = async {
            let read = read_bounded(stdout, max_output).await;
            if !matches!(read, Ok(Some(_))) {
                // Too much output (or a broken pipe): stop the program now.
                reaper.kill();
            }
            read
        };
        let wait = async {
            // The reaper exits once the program has and it has killed whatever the program
            // left behind (which closes the pipes they held).
            let status = child.wait().await;
            if status.is_ok() {
                reaper.exited();
            }
            status
        };
        let (out, err, status) = tokio::join!(out, read_tail(stderr, STDERR_TAIL), wait);
        match out.map_err(RunError::Io)? {
            None => Err(RunError::TooMuchOutput(max_output)),
            Some(stdout) => Ok(Finished {
                status: status.map_err(RunError::Io)?,
                stdout,
                stderr_tail: err.map_err(RunError::Io)?,
            }),
        }
    };
    let result = tokio::time::timeout(command.timeout, work).await;
    match result {
        Ok(r) => r,
        Err(_) => {
            reaper.kill();
            // Wait for the reaper's sweep (SIGKILLs: immediate).
            if child.wait().await.is_ok() {
                reaper.exited();
            }
            Err(RunError::TimedOut(command.timeout))
        }
    }
}

/// All of `from`, or `None` as soon as it has more than `max` bytes (never holding more than
/// `max + 1`).
async fn read_bounded(from: impl AsyncRead + Unpin, max: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    from.take(max.saturating_add(1))
        .read_to_end(&mut buf)
        .await?;
    Ok((buf.len() as u64 <= max).then_some(buf))
}

/// The last `keep` bytes of `from`, read to its end in constant memory.
async fn read_tail(mut from: impl AsyncRead + Unpin, keep: usize) -> std::io::Result<Vec<u8>> {
    let mut tail = Vec::with_capacity(2 * keep);
    let mut chunk = vec![0u8; 8192];
    loop {
        let n = from.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        tail.extend_from_slice(&chunk[..n]);
        if tail.len() > 2 * keep {
            tail.drain(..tail.len() - keep);
        }
    }
    if tail.len() > keep {
        tail.drain(..tail.len() - keep);
    }
    Ok(tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn read_bounded_stops_past_the_bound() {
        assert_eq!(
            read_bounded(&b"abcd"[..], 4).await.unwrap(),
            Some(b"abcd".to_vec())
        );
        assert_eq!(read_bounded(&b"abcde"[..], 4).await.unwrap(), None);
    }

    #[tokio::test]
    async fn read_tail_keeps_the_last_bytes() {
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(read_tail(&data[..], 100).await.unwrap(), data[19_900..]);
        assert_eq!(read_tail(&b"short"[..], 100).await.unwrap(), b"short");
    }
}
