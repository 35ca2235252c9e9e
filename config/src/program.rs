//! Where a command tool's program is found: an absolute path as it is, a bare name in a fixed
//! list of directories (never the caller's `PATH`).

use std::path::{Path, PathBuf};

/// Where a relative `command` is looked up: this fixed list, never the caller's `PATH`.
pub const COMMAND_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The program `command` names: itself when absolute, else the first executable file of that
/// name in [`COMMAND_PATH`].
///
/// # Errors
/// A message saying what was not found, or why the name is not allowed (a relative path with
/// `/`).
pub fn resolve_command(command: &str) -> Result<PathBuf, UnresolvedCommand> {
    resolve_command_text(command).map_err(UnresolvedCommand)
}

fn resolve_command_text(command: &str) -> Result<PathBuf, String> {
    let path = Path::new(command);
    if path.is_absolute() {
        return if is_executable(path) {
            Ok(path.to_path_buf())
        } else {
            Err(format!("`{command}` is not an executable file"))
        };
    }
    if command.contains('/') {
        return Err(format!(
            "`{command}` is a relative path; give an absolute path or a bare program name \
             (looked up in {COMMAND_PATH})"
        ));
    }
    COMMAND_PATH
        .split(':')
        .map(|dir| Path::new(dir).join(command))
        .find(|p| is_executable(p))
        .ok_or_else(|| format!("`{command}` was not found in {COMMAND_PATH}"))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Why a command tool's program was not found, or why its name is not allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnresolvedCommand(String);
