//! Whether the compiled-module cache may be used. A cache entry is native code that
//! `Module::deserialize_file` maps and runs, so a directory or entry that another user could
//! have written is not trusted: the runtime then compiles in memory and leaves the cache alone.
//!
//! Trusted means owned by the effective user and writable by no one else (neither group nor
//! other write permission). Only Unix has these notions; elsewhere every path is trusted.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Why a cache path is not trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Untrusted {
    /// Another user owns it.
    #[error("{path} is owned by uid {owner}, not by the current user (uid {user})")]
    NotOwned { path: String, owner: u32, user: u32 },
    /// The group or others may write it.
    #[error("{path} is writable by its group or by others (mode {mode:04o})")]
    Writable { path: String, mode: u32 },
    /// It is not the kind of file expected (a directory for the cache, a file for an entry).
    #[error("{path} is not a {expected}")]
    WrongKind {
        path: String,
        expected: &'static str,
    },
    /// Its metadata could not be read.
    #[error("cannot inspect {path}: {reason}")]
    Unreadable { path: String, reason: String },
}

/// The cache directory may be used: it is trusted, or does not exist yet (it is then created
/// private to the user).
pub(crate) fn check_dir(dir: &Path) -> Result<(), Untrusted> {
    check(dir, Expected::Directory)
}

/// A cache entry may be loaded: it is trusted, or does not exist.
pub(crate) fn check_file(file: &Path) -> Result<(), Untrusted> {
    check(file, Expected::File)
}

/// Logs `why` the cache is not used, once per process: every runtime built would otherwise
/// repeat it.
pub(crate) fn warn_once(why: &Untrusted) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!("not using the compiled-module cache, compiling in memory instead: {why}");
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expected {
    Directory,
    File,
}

impl Expected {
    fn name(self) -> &'static str {
        match self {
            Expected::Directory => "directory",
            Expected::File => "regular file",
        }
    }
}

#[cfg(unix)]
fn check(path: &Path, expected: Expected) -> Result<(), Untrusted> {
    use std::os::unix::fs::MetadataExt;

    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Untrusted::Unreadable {
                path: path.display().to_string(),
                reason: e.to_string(),
            });
        }
    };
    let kind_matches = match expected {
        Expected::Directory => metadata.is_dir(),
        Expected::File => metadata.is_file(),
    };
    if !kind_matches {
        return Err(Untrusted::WrongKind {
            path: path.display().to_string(),
            expected: expected.name(),
        });
    }
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    let user = unsafe { libc::geteuid() };
    verdict(path, metadata.uid(), metadata.mode(), user)
}

#[cfg(not(unix))]
fn check(_path: &Path, _expected: Expected) -> Result<(), Untrusted> {
    Ok(())
}

/// The rule itself: owned by `user`, no write permission for group or others.
#[cfg_attr(not(unix), allow(dead_code))]
fn verdict(path: &Path, owner: u32, mode: u32, user: u32) -> Result<(), Untrusted> {
    const GROUP_OR_OTHER_WRITE: u32 = 0o022;
    if owner != user {
        return Err(Untrusted::NotOwned {
            path: path.display().to_string(),
            owner,
            user,
        });
    }
    if mode & GROUP_OR_OTHER_WRITE != 0 {
        return Err(Untrusted::Writable {
            path: path.display().to_string(),
            mode: mode & 0o7777,
        });
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    /// A scratch directory under the system's temporary directory, removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("codemode-trust-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn writable(path: &Path, mode: u32) -> Result<(), Untrusted> {
        Err(Untrusted::Writable {
            path: path.display().to_string(),
            mode,
        })
    }

    #[test]
    fn a_private_directory_is_trusted() {
        let scratch = Scratch::new("private-dir");
        chmod(&scratch.0, 0o700);
        assert_eq!(check_dir(&scratch.0), Ok(()));
        chmod(&scratch.0, 0o755);
        assert_eq!(check_dir(&scratch.0), Ok(()));
    }

    #[test]
    fn a_directory_others_or_the_group_may_write_is_refused() {
        let scratch = Scratch::new("shared-dir");
        chmod(&scratch.0, 0o777);
        assert_eq!(check_dir(&scratch.0), writable(&scratch.0, 0o777));
        chmod(&scratch.0, 0o770);
        assert_eq!(check_dir(&scratch.0), writable(&scratch.0, 0o770));
        chmod(&scratch.0, 0o1777);
        assert_eq!(check_dir(&scratch.0), writable(&scratch.0, 0o1777));
    }

    #[test]
    fn a_file_others_may_write_is_refused() {
        let scratch = Scratch::new("files");
        let file = scratch.0.join("guest-x.cwasm");
        std::fs::write(&file, b"x").unwrap();
        chmod(&file, 0o600);
        assert_eq!(check_file(&file), Ok(()));
        chmod(&file, 0o644);
        assert_eq!(check_file(&file), Ok(()));
        chmod(&file, 0o666);
        assert_eq!(check_file(&file), writable(&file, 0o666));
        chmod(&file, 0o620);
        assert_eq!(check_file(&file), writable(&file, 0o620));
    }

    #[test]
    fn what_does_not_exist_yet_is_trusted() {
        let scratch = Scratch::new("missing");
        assert_eq!(check_dir(&scratch.0.join("sub")), Ok(()));
        assert_eq!(check_file(&scratch.0.join("guest-y.cwasm")), Ok(()));
    }

    #[test]
    fn the_wrong_kind_of_file_is_refused() {
        let scratch = Scratch::new("kinds");
        let file = scratch.0.join("plain");
        std::fs::write(&file, b"x").unwrap();
        assert_eq!(
            check_dir(&file),
            Err(Untrusted::WrongKind {
                path: file.display().to_string(),
                expected: "directory"
            })
        );
        assert_eq!(
            check_file(&scratch.0),
            Err(Untrusted::WrongKind {
                path: scratch.0.display().to_string(),
                expected: "regular file"
            })
        );
    }

    #[test]
    fn another_users_path_is_refused_whatever_its_mode() {
        let path = Path::new("/cache");
        assert_eq!(verdict(path, 1000, 0o700, 1000), Ok(()));
        assert_eq!(
            verdict(path, 0, 0o700, 1000),
            Err(Untrusted::NotOwned {
                path: "/cache".into(),
                owner: 0,
                user: 1000
            })
        );
        assert_eq!(verdict(path, 1000, 0o40777, 1000), writable(path, 0o777));
    }
}
