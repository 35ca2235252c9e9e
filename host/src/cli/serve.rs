//! `codemode serve`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use codemode_runtime::{Runtime, RuntimeConfig};

use super::{EXIT_USAGE, load_config};
use crate::server::{self, ServerState};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The config file (JSON). Without it, the embedded default config is used (see README).
    /// The file is watched: valid changes apply at once, invalid ones are reported and ignored.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Serve streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8080) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
}

pub async fn serve(args: ServeArgs) -> ExitCode {
    let config = match load_config(args.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
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
    let state = ServerState::new(runtime, config, args.config.clone()).await;
    let _watcher = match &args.config {
        Some(path) => match server::reload::watch(state.clone(), path.clone()) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!("not watching {} for changes: {e}", path.display());
                None
            }
        },
        None => None,
    };
    let result = match args.http {
        Some(addr) => {
            let shutdown = tokio_util::sync::CancellationToken::new();
            let on_signal = shutdown.clone();
            tokio::spawn(async move {
                let _ = tokio::signal::ctrl_c().await;
                on_signal.cancel();
            });
            server::serve_http(state.clone(), addr, shutdown, None).await
        }
        None => server::serve_stdio(state.clone()).await,
    };
    state.upstreams.shutdown().await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("codemode: {e:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}
