//! Hot reload: watch the config file; on a change, validate it and, if valid, swap it in.
//! An invalid file is reported (every error, with its JSON path) and the running config stays.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use codemode_policies::Config;
use notify::{RecursiveMode, Watcher};

use super::state::ServerState;

/// Changes closer together than this are applied once (editors write files in several steps).
const DEBOUNCE: Duration = Duration::from_millis(250);

/// Watches `path` until the returned watcher is dropped. The directory is watched, not the file,
/// so that editors which replace the file (write a temp file, rename) are followed.
pub fn watch(state: Arc<ServerState>, path: PathBuf) -> notify::Result<notify::RecommendedWatcher> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let file_name = path.file_name().map(|n| n.to_os_string());
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Opening and reading the file (our own reload does) are access events: only
        // modifications, creations, renames and removals mean a new config.
        if let Ok(event) = event
            && !event.kind.is_access()
            && event
                .paths
                .iter()
                .any(|p| p.file_name().map(|n| n.to_os_string()) == file_name)
        {
            let _ = tx.send(());
        }
    })?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    watcher.watch(dir, RecursiveMode::NonRecursive)?;
    tokio::spawn(async move {
        while rx.recv().await.is_some() {
            // Let the burst of events of one save settle, then read once.
            tokio::time::sleep(DEBOUNCE).await;
            while rx.try_recv().is_ok() {}
            reload(&state, &path).await;
        }
    });
    Ok(watcher)
}

/// Reads, validates and applies the config at `path`; returns whether it was applied. The file
/// is read and parsed on a blocking thread: a slow disk or a large file must not hold up the
/// async threads serving evals.
pub async fn reload(state: &ServerState, path: &Path) -> bool {
    let applied = load_and_apply(state, path).await;
    // `/readyz` and the metrics report it; it never makes the node unready.
    state.health.set_reload_failed(!applied);
    applied
}

async fn load_and_apply(state: &ServerState, path: &Path) -> bool {
    let file = path.to_path_buf();
    let loaded = match tokio::task::spawn_blocking(move || Config::load(file)).await {
        Ok(loaded) => loaded,
        Err(e) => {
            tracing::error!(
                "config {} changed but could not be read (the reading task failed: {e}); keeping the running config",
                path.display()
            );
            return false;
        }
    };
    match loaded {
        Ok(config) => {
            // The engine was sized at start (its largest memory): limits past it cannot apply
            // without a restart, and every eval would fail on them.
            if let Err(e) = config
                .limits
                .eval_options()
                .validate(state.runtime.config())
            {
                tracing::error!(
                    "config {} changed but its limits do not fit this server ({e}); keeping the running config (restart codemode to apply it)",
                    path.display()
                );
                return false;
            }
            tracing::info!("config {} changed: applying it", path.display());
            for warning in &config.warnings {
                tracing::warn!("config {}: {warning}", path.display());
            }
            state.apply_config(config).await;
            true
        }
        Err(errors) => {
            tracing::error!(
                "config {} changed but is invalid; keeping the running config:\n{errors}",
                path.display()
            );
            false
        }
    }
}
