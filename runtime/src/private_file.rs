//! Files and directories only their owner may read or write, whatever the umask: on Unix, a
//! file is created `0600` and a directory `0700` (elsewhere the platform's defaults apply).
//!
//! What codemode writes to disk is either trusted when read back (the compiled guest: a
//! writable cache would be code injection) or secret (the state key, sealed records, audit
//! logs), so it is created private rather than made private after the fact, which would leave a
//! window. The mode applies only to what is created: an existing file or directory keeps its
//! own, which is for its reader to check (the module cache's trust rules, the state key's).
//!
//! ```
//! use codemode_runtime::private_file::{self, Existing, Synced};
//!
//! # fn main() -> std::io::Result<()> {
//! let dir = std::env::temp_dir().join(format!("private-file-doc-{}", std::process::id()));
//! private_file::create_dir(&dir)?;
//! let temp = dir.join("record.tmp");
//! // A record written whole to a fresh file, then moved into place: readers never see half.
//! private_file::write(&temp, Existing::Fail, &[b"header", b"body"], Synced::Data)?;
//! std::fs::rename(&temp, dir.join("record"))?;
//! assert_eq!(std::fs::read(dir.join("record"))?, b"headerbody");
//! # #[cfg(unix)]
//! # {
//! #     use std::os::unix::fs::PermissionsExt;
//! #     let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
//! #     assert_eq!((mode(&dir), mode(&dir.join("record"))), (0o700, 0o600));
//! # }
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```

use std::fs::File;
use std::io::Write;
use std::path::Path;

/// What [`open`] and [`write()`] do when the file exists already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Existing {
    /// Fail with [`std::io::ErrorKind::AlreadyExists`] (`O_EXCL`): the file is surely the
    /// caller's own, not one planted or left behind by someone else.
    Fail,
    /// Empty it and write from the start.
    Truncate,
    /// Keep its contents and write at its end (`O_APPEND`).
    Append,
}

/// How much of a [`write()`] is synced to disk before it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Synced {
    /// Nothing: the data reaches the disk when the OS writes it back.
    No,
    /// The data and what is needed to read it back (`fdatasync`).
    Data,
    /// The data and all the file's metadata (`fsync`).
    All,
}

/// Creates `dir` and its missing parents, each private (`0700`). An existing directory is
/// left as it is.
///
/// # Errors
/// As [`std::fs::DirBuilder::create`].
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Opens `path` for writing, creating it private (`0600`) when it does not exist; `existing`
/// says what happens when it does.
///
/// # Errors
/// As [`std::fs::OpenOptions::open`]; [`std::io::ErrorKind::AlreadyExists`] for an existing
/// file under [`Existing::Fail`].
pub fn open(path: &Path, existing: Existing) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    match existing {
        Existing::Fail => options.write(true).create_new(true),
        Existing::Truncate => options.write(true).create(true).truncate(true),
        Existing::Append => options.append(true).create(true),
    };
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Writes `parts`, one after the other, to `path` opened with [`open`], then syncs as `sync`
/// says. A failed write may leave part of the data behind: write to a temporary name and
/// rename it into place for all or nothing.
///
/// # Errors
/// As [`open`], [`std::io::Write::write_all`] and [`File::sync_data`] or [`File::sync_all`].
pub fn write(
    path: &Path,
    existing: Existing,
    parts: &[&[u8]],
    sync: Synced,
) -> std::io::Result<()> {
    let mut file = open(path, existing)?;
    for part in parts {
        file.write_all(part)?;
    }
    match sync {
        Synced::No => Ok(()),
        Synced::Data => file.sync_data(),
        Synced::All => file.sync_all(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory under the temp dir, removed on drop.
    struct Scratch(std::path::PathBuf);
    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!(
                "codemode-private-file-{name}-{}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            Scratch(dir)
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn each_way_of_opening_treats_an_existing_file_as_it_says() {
        let scratch = Scratch::new("existing");
        create_dir(&scratch.0).unwrap();
        let path = scratch.0.join("f");
        write(&path, Existing::Fail, &[b"one"], Synced::All).unwrap();
        let again = write(&path, Existing::Fail, &[b"two"], Synced::No);
        assert_eq!(again.unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        write(&path, Existing::Append, &[b"+", b"two"], Synced::Data).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one+two");
        write(&path, Existing::Truncate, &[b"3"], Synced::No).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"3");
    }

    #[cfg(unix)]
    #[test]
    fn what_is_created_is_private_and_what_exists_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let scratch = Scratch::new("modes");
        let nested = scratch.0.join("a").join("b");
        // Under the usual umask (022) the defaults would be 0755 and 0644.
        create_dir(&nested).unwrap();
        write(&nested.join("f"), Existing::Truncate, &[b"x"], Synced::No).unwrap();
        assert_eq!(
            (mode(&scratch.0), mode(&nested), mode(&nested.join("f"))),
            (0o700, 0o700, 0o600)
        );
        let shared = scratch.0.join("shared");
        std::fs::write(&shared, b"x").unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o644)).unwrap();
        write(&shared, Existing::Append, &[b"y"], Synced::No).unwrap();
        assert_eq!(mode(&shared), 0o644);
    }
}
