//! The process's limit on open files (`RLIMIT_NOFILE`), which sizes the listeners' default
//! connection cap.

/// The soft limit on open files now; `None` where it cannot be read.
pub(crate) fn soft_limit() -> Option<u64> {
    imp::get().map(|(soft, _)| soft)
}

/// Raises the soft limit to the hard one (as far as the system allows); the soft limit after.
pub(crate) fn raise_soft_limit() -> Option<u64> {
    let (soft, hard) = imp::get()?;
    if soft < hard {
        match imp::raise() {
            Ok(()) => tracing::debug!("the open-file limit is raised from {soft} to {hard}"),
            Err(e) => {
                tracing::debug!("the open-file limit stays at {soft} (raising it to {hard}: {e})");
            }
        }
    }
    soft_limit()
}

#[cfg(unix)]
mod imp {
    fn read() -> std::io::Result<libc::rlimit> {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `getrlimit` writes one `rlimit` through the valid pointer it is given.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(limit)
    }

    /// `(soft, hard)`, `RLIM_INFINITY` as `u64::MAX`.
    pub(super) fn get() -> Option<(u64, u64)> {
        let limit = read().ok()?;
        Some((as_u64(limit.rlim_cur), as_u64(limit.rlim_max)))
    }

    /// Sets the soft limit to the hard one.
    pub(super) fn raise() -> std::io::Result<()> {
        let mut limit = read()?;
        limit.rlim_cur = limit.rlim_max;
        // SAFETY: `setrlimit` only reads the `rlimit` behind the valid pointer it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    #[cfg_attr(
        any(target_os = "linux", target_os = "macos"),
        expect(
            clippy::unnecessary_cast,
            reason = "rlim_t is u64 on Linux and macOS, i64 on FreeBSD"
        )
    )]
    fn as_u64(n: libc::rlim_t) -> u64 {
        if n == libc::RLIM_INFINITY {
            u64::MAX
        } else {
            n as u64
        }
    }
}

#[cfg(not(unix))]
mod imp {
    pub(super) fn get() -> Option<(u64, u64)> {
        None
    }

    pub(super) fn raise() -> std::io::Result<()> {
        Ok(())
    }
}
