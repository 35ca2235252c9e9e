//! `codemode auth login|status|logout`: the OAuth logins of the config's HTTP upstreams, kept
//! sealed in the durable store (`durable`: the local state directory by default, Redis in a
//! cluster), one per upstream and shared by every caller of that codemode.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use codemode_config::ServerTransport;
use codemode_config::UpstreamOAuth;
use codemode_policies::Config;
use codemode_store::Store;
use codemode_upstream::oauth::{Browser, Logins};

use super::common::{EXIT_USAGE, config_path, load_config};

/// One line on stdout (a closed stdout is nobody's business here).
fn say(line: String) {
    let _ = writeln!(std::io::stdout(), "{line}");
}

/// Exit code of a login or logout that failed.
const EXIT_FAILED: u8 = 1;

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Log in to an HTTP upstream that uses OAuth (the authorization-code flow in a browser, or
    /// the client-credentials grant when its `oauth.grantType` says so).
    Login(LoginArgs),
    /// One line per OAuth upstream: name, state (`logged in`, `needs login`, `expired`),
    /// expiry, scopes.
    Status(ConfigArg),
    /// Forget the login of an upstream.
    Logout(LogoutArgs),
}

#[derive(Debug, Args)]
pub struct ConfigArg {
    /// The config file. Default: `$CODEMODE_CONFIG`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The upstream (its name in `mcpServers`).
    server: String,
    #[command(flatten)]
    config: ConfigArg,
    /// Open the authorization URL with this command (split into words as a shell would, no
    /// shell run; the URL is appended as its last argument), e.g. `xdg-open`. Default: print
    /// the URL and wait for the browser to come back (5 minutes).
    #[arg(long, value_name = "CMD")]
    browser: Option<String>,
}

#[derive(Debug, Args)]
pub struct LogoutArgs {
    /// The upstream (its name in `mcpServers`).
    server: String,
    #[command(flatten)]
    config: ConfigArg,
}

pub(crate) async fn auth(command: AuthCommand) -> ExitCode {
    match command {
        AuthCommand::Login(args) => login(args).await,
        AuthCommand::Status(args) => status(args).await,
        AuthCommand::Logout(args) => logout(args).await,
    }
}

/// The config and the logins it keeps.
async fn open(flag: Option<&Path>) -> Result<(Config, Logins), ExitCode> {
    let config = load_config(config_path(flag).as_deref())?;
    let store = Store::open(&config.durable).await.map_err(|e| {
        eprintln!("codemode: the durable store, where logins are kept, did not open: {e}");
        ExitCode::from(EXIT_FAILED)
    })?;
    Ok((config, Logins::sealed(store)))
}

/// The URL and `oauth` of the HTTP upstream `server`.
fn upstream<'c>(
    config: &'c Config,
    server: &str,
) -> Result<(&'c str, Option<&'c UpstreamOAuth>), ExitCode> {
    match config.servers.get(server).map(|s| &s.transport) {
        Some(ServerTransport::Http { url, oauth, .. }) => Ok((url, oauth.as_ref())),
        Some(ServerTransport::Stdio { .. }) => {
            eprintln!("codemode: `{server}` is a stdio server; logins are for HTTP servers");
            Err(ExitCode::from(EXIT_USAGE))
        }
        None => {
            let names: Vec<&str> = config.servers.keys().map(String::as_str).collect();
            eprintln!(
                "codemode: no server `{server}` in the config; its servers: {}",
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                }
            );
            Err(ExitCode::from(EXIT_USAGE))
        }
    }
}

async fn login(args: LoginArgs) -> ExitCode {
    let (config, logins) = match open(args.config.config.as_deref()).await {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let (url, oauth) = match upstream(&config, &args.server) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let browser = match args.browser.as_deref().map(Browser::command) {
        Some(Ok(browser)) => browser,
        Some(Err(e)) => {
            eprintln!("codemode: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
        None => super::common::print_login_url(),
    };
    match logins.login(&args.server, url, oauth, &browser, None).await {
        Ok(status) => {
            say(status.line());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("codemode: {e}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}

async fn status(args: ConfigArg) -> ExitCode {
    let (config, logins) = match open(args.config.as_deref()).await {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let mut failed = false;
    for (name, server) in &config.servers {
        let ServerTransport::Http { url, oauth, .. } = &server.transport else {
            continue;
        };
        match logins.status(name, url).await {
            // Only upstreams that use OAuth: configured so, or logged in to.
            Ok(status)
                if oauth.is_some()
                    || status.state != codemode_upstream::oauth::LoginState::NeedsLogin =>
            {
                say(status.line());
            }
            Ok(_) => {}
            Err(e) => {
                eprintln!("codemode: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

async fn logout(args: LogoutArgs) -> ExitCode {
    let (config, logins) = match open(args.config.config.as_deref()).await {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let url = match upstream(&config, &args.server) {
        Ok((url, _)) => url,
        Err(code) => return code,
    };
    match logins.logout(&args.server, url).await {
        Ok(true) => {
            say(format!("{}: logged out", args.server));
            ExitCode::SUCCESS
        }
        Ok(false) => {
            say(format!("{}: was not logged in", args.server));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("codemode: {e}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}
