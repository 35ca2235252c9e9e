//! The reaper between codemode and a command: a process of its own that makes itself the
//! "child subreaper" of everything the command starts (`PR_SET_CHILD_SUBREAPER`), so that a
//! descendant that leaves the command's process group (`setsid`, a double fork) is still its
//! descendant; when the command exits, or codemode asks (SIGTERM, also sent by the kernel when
//! codemode dies: `PR_SET_PDEATHSIG`), it kills the command's group and then every process
//! left below it, and exits as the command did.
//!
//! It runs in the forked child before `exec` ([`std::os::unix::process::CommandExt::pre_exec`]),
//! so it only makes async-signal-safe system calls: no allocation, no lock, no `std::fs`.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that started the reaper ends: a call runs on the
//! thread of its eval (or an executor worker), which outlives the call, and a call whose eval
//! ends is dropped, which tells the reaper to sweep anyway. Without `/proc` (no list of
//! children), only the program's process group is killed.

use std::io;

/// The buffer the children lists are read through (pids, a few bytes each; a longer list is
/// read in several rounds).
const CHILDREN_BUF: usize = 4096;

/// The `pre_exec` hook: turns the forked child into the reaper and forks the command from it.
/// Returns (in the command's process, which `exec`s next) once the reaper runs; the reaper
/// itself never returns.
///
/// `parent` is codemode's pid: a reaper whose parent is already another has lost it (before
/// `PR_SET_PDEATHSIG` was set) and exits at once.
///
/// # Safety
/// Only to be called between `fork` and `exec` (from `pre_exec`).
pub(super) unsafe fn become_reaper(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: (the whole block) each call is a plain system call on this process's own state,
    // async-signal-safe, on memory of this stack frame.
    unsafe {
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        // codemode gone (killed, crashed): sweep as if it had asked.
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        // SIGTERM and SIGCHLD are taken with `sigwaitinfo`, never by a handler.
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
        // codemode may have died before PDEATHSIG was set.
        if libc::getppid() != parent {
            libc::_exit(1);
        }
        match libc::fork() {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                // The command: a process group of its own (so that the reaper can kill it
                // without killing itself), dying with the reaper, the default signal mask.
                libc::setpgid(0, 0);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                Ok(())
            }
            command => reap(command, &set),
        }
    }
}

/// The reaper's life: wait for the command or for SIGTERM, then kill the command's group and
/// every process left below the reaper, reap them all, and exit as the command did.
unsafe fn reap(command: libc::pid_t, set: &libc::sigset_t) -> ! {
    // SAFETY: (the whole block) system calls on this process's own state and stack memory.
    unsafe {
        // Hold nothing: the pipes' ends (the command's standard streams, std's exec-error
        // pipe) close when the command and its descendants close them, not when the reaper does.
        close_all_fds();
        let mut status: Option<libc::c_int> = None;
        let mut sweeping = false;
        loop {
            // Reap whatever has exited.
            loop {
                let mut st: libc::c_int = 0;
                let pid = libc::waitpid(-1, &mut st, libc::WNOHANG);
                if pid == command {
                    status = Some(st);
                    sweeping = true;
                } else if pid <= 0 {
                    if pid < 0 && errno() == libc::ECHILD {
                        // Nothing is left below the reaper.
                        exit_as(status.unwrap_or(libc::SIGKILL));
                    }
                    break;
                }
            }
            if sweeping {
                libc::kill(-command, libc::SIGKILL);
                if !kill_children() {
                    // No list of children to read (no `/proc`): what is left is beyond reach;
                    // the command's group is killed, and the reaper goes.
                    exit_as(status.unwrap_or(libc::SIGKILL));
                }
                // Block until one of them is gone, then look again.
                let mut st: libc::c_int = 0;
                let pid = libc::waitpid(-1, &mut st, 0);
                if pid == command {
                    status = Some(st);
                }
                continue;
            }
            if libc::sigwaitinfo(set, std::ptr::null_mut()) == libc::SIGTERM {
                sweeping = true;
            }
        }
    }
}

/// SIGKILL to every child of this (single-threaded) process, from `/proc/thread-self/children`.
/// `false` if the list cannot be read.
unsafe fn kill_children() -> bool {
    // SAFETY: open/read/close/kill on a NUL-terminated literal and a stack buffer.
    unsafe {
        let fd = libc::open(
            c"/proc/thread-self/children".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return false;
        }
        let mut buf = [0u8; CHILDREN_BUF];
        let mut pid: libc::pid_t = 0;
        loop {
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if n <= 0 {
                break;
            }
            for &b in &buf[..n as usize] {
                if b.is_ascii_digit() {
                    pid = pid
                        .saturating_mul(10)
                        .saturating_add(libc::pid_t::from(b - b'0'));
                } else {
                    if pid > 0 {
                        libc::kill(pid, libc::SIGKILL);
                    }
                    pid = 0;
                }
            }
        }
        if pid > 0 {
            libc::kill(pid, libc::SIGKILL);
        }
        libc::close(fd);
        true
    }
}

/// Exits with the command's wait status: its exit code, or death by its signal.
unsafe fn exit_as(status: libc::c_int) -> ! {
    // SAFETY: system calls on this process's own state.
    unsafe {
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        let sig = if libc::WIFSIGNALED(status) {
            libc::WTERMSIG(status)
        } else {
            libc::SIGKILL
        };
        // No core file of the reaper for a command that dumped one.
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        libc::signal(sig, libc::SIG_DFL);
        let mut only: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut only);
        libc::sigaddset(&mut only, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
        libc::kill(libc::getpid(), sig);
        libc::_exit(128 + sig)
    }
}

/// Closes every file descriptor (`close_range`, else one by one up to the limit).
unsafe fn close_all_fds() {
    // SAFETY: close on descriptors of this process, which nothing else here uses.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) == 0 {
            return;
        }
        let mut limit: libc::rlimit = std::mem::zeroed();
        let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur.min(1 << 20)
        } else {
            1024
        };
        for fd in 0..max as libc::c_int {
            libc::close(fd);
        }
    }
}

fn errno() -> libc::c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}
