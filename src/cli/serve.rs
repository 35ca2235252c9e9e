//! `codemode serve`: flags to a [`Server`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use codemode_config::LogFormat;
use codemode_host::Server;

use super::common::{EXIT_USAGE, load_config};

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

    /// Serve `/healthz`, `/readyz` and `/metrics` (only those) on a listener of their own, e.g.
    /// 0.0.0.0:9090, instead of `server.admin.listen`. They are served on the --http listener
    /// too.
    #[arg(long, value_name = "ADDR", value_parser = parse_listen_address, requires = "http")]
    admin_http: Option<SocketAddr>,

    /// How log lines are written on stderr: `text` (for people) or `json` (one object per line,
    /// for a log pipeline). Default: `logging.format` of the config, else text.
    #[arg(long, value_name = "FORMAT", value_parser = clap::builder::PossibleValuesParser::new(["text", "json"]))]
    log_format: Option<String>,

    /// Serve HTTP on a non-loopback address without `server.auth` (anyone who reaches the port
    /// runs scripts with every upstream tool). A warning is printed on every start.
    #[arg(long, requires = "http")]
    allow_unauthenticated: bool,
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

/// Runs `codemode serve`: the library's [`Server`] fed from the flags.
pub async fn serve(args: ServeArgs) -> ExitCode {
    if args.http.is_some() || args.approvals_http.is_some() {
        // Listeners size their default connection cap from the open-file limit: take what the
        // hard limit allows (a service starts with systemd's soft 1,024).
        codemode_host::raise_descriptor_limit();
    }
    let config_path = super::common::config_path(args.config.as_deref());
    let config = match load_config(config_path.as_deref()) {
        Ok(c) => c,
        Err(code) => {
            super::logs::init(LogFormat::Text);
            return code;
        }
    };
    let format = match args.log_format.as_deref() {
        Some(flag) => flag.parse().unwrap_or_default(),
        None => config.logging.format,
    };
    super::logs::init(format);
    let mut server = Server::builder(config)
        .allow_unauthenticated(args.allow_unauthenticated)
        .shutdown_on_signals();
    for host in args.allowed_hosts {
        server = server.allowed_host(host);
    }
    for origin in args.allowed_origins {
        server = server.allowed_origin(origin);
    }
    if let Some(path) = config_path {
        server = server.watch_config(path);
    }
    if let Some(addr) = args.approvals_http {
        server = server.approvals_http(addr);
    }
    if let Some(addr) = args.admin_http {
        server = server.admin_http(addr);
    }
    let served = match args.http {
        Some(addr) => server.serve_http(addr).await,
        None => server.serve_stdio().await,
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("codemode: {e}");
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
