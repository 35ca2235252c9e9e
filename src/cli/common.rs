//! What the subcommands share: exit codes, the config they load, the script they read.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use codemode_config::ConfigErrorKind;
use codemode_policies::Config;

/// Exit code of a script that failed (threw, hit a limit, did not parse).
pub const EXIT_SCRIPT_FAILED: u8 = 1;
/// Exit code of a usage or configuration error.
pub const EXIT_USAGE: u8 = 2;

pub use codemode_host::DEFAULT_CONFIG;

/// Whether stderr may carry colours: a terminal, and `NO_COLOR` unset or empty.
pub(crate) fn stderr_colour() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The environment variable naming the config file when `--config` is not given.
pub const CONFIG_ENV: &str = "CODEMODE_CONFIG";

/// The config file to use: `--config` when given, else `$CODEMODE_CONFIG` when set and
/// non-empty, else none.
pub(crate) fn config_path(flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf).or_else(|| {
        std::env::var_os(CONFIG_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

/// Prints a config's warnings on stderr, as `file: path: warning: message`.
pub(crate) fn print_config_warnings(name: &str, config: &Config) {
    for warning in &config.warnings {
        eprintln!("{name}: {}: warning: {}", warning.path(), warning.message());
    }
}

/// Loads `path`, or the embedded default; prints every error and returns exit code 2 on
/// failure, and prints the warnings of a config that loads.
pub(crate) fn load_config(path: Option<&Path>) -> Result<Config, ExitCode> {
    let (name, result) = match path {
        Some(path) => (path.display().to_string(), Config::load(path)),
        None => (
            "<embedded default config>".to_string(),
            Config::from_json_str(DEFAULT_CONFIG),
        ),
    };
    if let Ok(config) = &result {
        print_config_warnings(&name, config);
    }
    result.map_err(|errors| {
        for error in errors.iter() {
            // A file that cannot be read is reported under the file's own name.
            if error.kind() == ConfigErrorKind::Io {
                eprintln!("{error}");
            } else {
                eprintln!("{name}: {error}");
            }
        }
        ExitCode::from(EXIT_USAGE)
    })
}

/// The upstreams' OAuth logins `codemode auth login` saved in the durable store, or this
/// process's memory (with a warning) when the store does not open.
pub(crate) async fn saved_logins(config: &Config) -> codemode_upstream::oauth::Logins {
    use codemode_upstream::oauth::Logins;
    match codemode_store::Store::open(&config.durable).await {
        Ok(store) => Logins::sealed(store),
        Err(e) => {
            tracing::warn!(error = %e, "the durable store did not open; OAuth logins to upstreams last for this process only");
            Logins::memory()
        }
    }
}

/// Prints the authorization URL of a login for the person at the terminal to open.
pub(crate) fn print_login_url() -> codemode_upstream::oauth::Browser {
    use codemode_upstream::oauth::Browser;
    Browser::Show(std::sync::Arc::new(|server: &str, url: &str| {
        eprintln!(
            "codemode: to log in to `{}`, open this URL in a browser (waiting up to {} minutes):\n  {}",
            codemode_policies::neutralize(server),
            Browser::LOGIN_WAIT.as_secs() / 60,
            codemode_policies::neutralize(url)
        );
    }))
}

/// Reads a script from a file or, for `-`, standard input: `(display name, code)`.
pub(crate) fn read_script(file: &PathBuf) -> Result<(String, String), String> {
    if file.as_os_str() == "-" {
        let mut code = String::new();
        std::io::stdin()
            .read_to_string(&mut code)
            .map_err(|e| format!("cannot read the script from standard input: {e}"))?;
        return Ok(("<stdin>".into(), code));
    }
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let code =
        String::from_utf8(bytes).map_err(|e| format!("{} is not UTF-8: {e}", file.display()))?;
    Ok((file.display().to_string(), code))
}
