//! `codemode serve`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use codemode_runtime::{Runtime, RuntimeConfig};

use super::{EXIT_USAGE, load_config};
use crate::approvals;
use crate::server::{self, ServerState};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The config file (JSON, comments allowed). Default: `$CODEMODE_CONFIG` when set, else the
    /// embedded default config (see README). The file is watched: valid changes apply at once,
    /// invalid ones are reported and ignored.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio; ADDR is HOST:PORT, e.g.
    /// 127.0.0.1:8080, localhost:8080 or [::1]:8080 (a name is resolved once, at start).
    #[arg(long, value_name = "ADDR", value_parser = parse_listen_address)]
    http: Option<SocketAddr>,

    /// Serve the HTTP approval API and its page (http://ADDR/approvals/ui) on a listener of their
    /// own, e.g. 127.0.0.1:8181 — for stdio servers, so that asks can be answered in a browser or
    /// with `codemode approve`. Without authentication only a loopback address is accepted.
    #[arg(long, value_name = "ADDR", value_parser = parse_listen_address)]
    approvals_http: Option<SocketAddr>,

    /// Also accept requests whose `Host` is H (`name` or `name:port`), besides the loopback
    /// names and `server.http.allowedHosts`. Repeatable.
    #[arg(long = "allowed-host", value_name = "H", requires = "http")]
    allowed_hosts: Vec<String>,

    /// Accept browser requests from origin O (`scheme://host[:port|:*]`; no port: the default one), besides
    /// `server.http.allowedOrigins`; any origin given turns Origin validation on. Repeatable.
    #[arg(long = "allowed-origin", value_name = "O", requires = "http")]
    allowed_origins: Vec<String>,

    /// Serve HTTP on a non-loopback address without `server.auth` (anyone who reaches the port
    /// runs scripts with every upstream tool). A warning is printed on every start.
    #[arg(long, requires = "http")]
    allow_unauthenticated: bool,
}

/// The HTTP options of `serve --http ADDR`: the config's `server` section plus the flags.
/// Refuses a non-loopback address without auth unless `--allow-unauthenticated`.
fn http_options(
    args: &ServeArgs,
    addr: SocketAddr,
    settings: &codemode_policies::ServerSettings,
) -> Result<server::HttpOptions, String> {
    let auth = crate::auth::from_settings(settings.auth.as_ref()).map_err(|e| e.to_string())?;
    if !auth.enabled() && !addr.ip().is_loopback() {
        if !args.allow_unauthenticated {
            return Err(format!(
                "refusing to serve HTTP on {addr} without authentication: anyone who can reach it could run \
                 scripts with every upstream tool. Configure `server.auth` (tokens or jwt), listen on a \
                 loopback address (127.0.0.1), or pass --allow-unauthenticated"
            ));
        }
        eprintln!(
            "codemode: warning: serving HTTP on {addr} WITHOUT authentication (--allow-unauthenticated): \
             anyone who can reach it runs scripts with every upstream tool"
        );
    }
    for origin in &args.allowed_origins {
        if !codemode_policies::valid_allowed_origin(origin) {
            return Err(format!(
                "--allowed-origin: an origin is `null` or `scheme://host[:port|:*]` with no path (e.g. https://app.example.com), got `{origin}`"
            ));
        }
    }
    Ok(server::HttpOptions {
        allowed_hosts: settings
            .http
            .allowed_hosts
            .iter()
            .chain(&args.allowed_hosts)
            .cloned()
            .collect(),
        allowed_origins: settings
            .http
            .allowed_origins
            .iter()
            .chain(&args.allowed_origins)
            .cloned()
            .collect(),
        auth,
        extra: None,
        session_store: None,
    })
}

/// `HOST:PORT` → the address to listen on: an IP address as it is, a host name resolved (its
/// first IPv4 address, else its first address).
fn parse_listen_address(text: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err("expected HOST:PORT, e.g. 127.0.0.1:8080 or localhost:8080".into());
    };
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(format!(
            "expected HOST:PORT with a port from 0 to 65535, e.g. localhost:8080 (got `{text}`)"
        ));
    }
    let addrs: Vec<SocketAddr> = text
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve `{host}`: {e}"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(|| format!("`{host}` resolves to no address"))
}

pub async fn serve(args: ServeArgs) -> ExitCode {
    let config_path = super::config_path(args.config.as_deref());
    let config = match load_config(config_path.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut http = match args.http {
        Some(addr) => match http_options(&args, addr, &config.server) {
            Ok(options) => Some((addr, options)),
            Err(message) => {
                eprintln!("codemode: {message}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
        None => None,
    };
    // The approval API's own listener authenticates as the MCP endpoint does.
    let approvals_auth = match crate::auth::from_settings(config.server.auth.as_ref()) {
        Ok(auth) => auth,
        Err(e) => {
            eprintln!("codemode: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let mut runtime_config = RuntimeConfig::default();
    runtime_config.max_memory(config.limits.memory.max(64 << 20));
    let runtime = match Runtime::new(&runtime_config) {
        Ok(rt) => rt,
        Err(e) => {
            // `{:#}`: the error and its causes (wasmtime's, say), on one line.
            eprintln!("codemode: {:#}", anyhow::Error::new(e));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    // The approval API's own listener is bound first: a bad address stops here, before any
    // upstream server starts.
    let approvals_listener = match args.approvals_http {
        Some(addr) => match approvals::http::bind(addr, approvals_auth.as_ref()).await {
            Ok(listener) => Some(listener),
            Err(e) => {
                eprintln!("codemode: {e:#}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
        None => None,
    };
    // Over HTTP, evals waiting for a human are saved to the durable store (`durable`): they
    // survive a restart and, with a shared store, resume on any node.
    let durable = match &mut http {
        Some((_, options)) => match crate::store::Store::open(&config.durable).await {
            Ok(store) => {
                if matches!(
                    config.durable.store,
                    codemode_policies::StoreLocation::Redis(_)
                ) {
                    options.session_store = Some(crate::store::sessions::SealedSessionStore::new(
                        store.clone(),
                    ));
                }
                Some(Arc::new(server::durable::Durable::new(
                    store,
                    config.durable.suspend_to_store_after,
                )))
            }
            Err(e) => {
                eprintln!("codemode: the durable store: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
        None => None,
    };
    let state = ServerState::new(runtime, config, config_path.clone()).await;
    if let Some(durable) = durable {
        if let Err(e) = durable.keep_guest(&state.runtime).await {
            eprintln!("codemode: the durable store: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
        state.enable_durable(durable);
    }
    let _watcher = match &config_path {
        Some(path) => match server::reload::watch(state.clone(), path.clone()) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!("not watching {} for changes: {e}", path.display());
                None
            }
        },
        None => None,
    };
    if let Some(listener) = approvals_listener {
        tokio::spawn(approvals::http::serve(
            listener,
            state.approvals.clone(),
            approvals_auth,
            server::live_limits(&state),
            tokio_util::sync::CancellationToken::new(),
        ));
    }
    // SIGTERM or Ctrl-C: graceful shutdown (see `server::drain`); a second one cancels at once.
    let shutdown = tokio_util::sync::CancellationToken::new();
    {
        let (shutdown, drain) = (shutdown.clone(), state.drain.clone());
        let durable = state.durable().cloned();
        tokio::spawn(async move {
            server::drain::shutdown_signal(drain).await;
            tracing::info!("shutting down");
            // Every eval waiting for a human is saved before the drain waits for the others.
            if let Some(durable) = durable {
                durable.park_all();
            }
            shutdown.cancel();
        });
    }
    let result = match http {
        Some((addr, options)) => {
            server::serve_http(state.clone(), addr, options, shutdown, None).await
        }
        None => server::serve_stdio(state.clone(), shutdown).await,
    };
    state.shutdown_upstreams().await;
    // The audit writer writes on a thread of its own: wait for the records still queued.
    if let Some(audit) = state.audit() {
        let _ = tokio::task::spawn_blocking(move || audit.flush()).await;
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("codemode: {e:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_listen_address;

    #[test]
    fn listen_addresses() {
        let ok = [
            ("127.0.0.1:8080", "127.0.0.1:8080"),
            ("[::1]:9", "[::1]:9"),
            ("localhost:8080", "127.0.0.1:8080"),
            ("0.0.0.0:0", "0.0.0.0:0"),
        ];
        for (text, want) in ok {
            assert_eq!(
                parse_listen_address(text).unwrap().to_string(),
                want,
                "{text}"
            );
        }
        let bad = [
            (
                "8080",
                "expected HOST:PORT, e.g. 127.0.0.1:8080 or localhost:8080",
            ),
            (
                ":8080",
                "expected HOST:PORT with a port from 0 to 65535, e.g. localhost:8080 (got `:8080`)",
            ),
            (
                "localhost:99999",
                "expected HOST:PORT with a port from 0 to 65535, e.g. localhost:8080 (got `localhost:99999`)",
            ),
            (
                "localhost:http",
                "expected HOST:PORT with a port from 0 to 65535, e.g. localhost:8080 (got `localhost:http`)",
            ),
        ];
        for (text, want) in bad {
            assert_eq!(parse_listen_address(text).unwrap_err(), want, "{text}");
        }
        let unknown = parse_listen_address("no-such-host.invalid:80").unwrap_err();
        assert!(
            unknown.starts_with("cannot resolve `no-such-host.invalid`: "),
            "{unknown}"
        );
    }
}
