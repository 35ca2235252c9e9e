//! `codemode serve`: codemode as an MCP server over stdio or streamable HTTP.
//!
//! Tools: `eval` (unrestricted unless `evaluation.defaultProfile` is set), `codemode_eval_<profile>`
//! per profile, `search_tools`, `get_tools`. Scripts reach upstream MCP tools as
//! `codemode.<server>__<tool>` and the built-ins `search_tools`, `get_tools` and
//! `hitl_request`. Human approval goes to the session's own client: `elicitation/create` on
//! protocol 2025-11-25 and older, input-required results on 2026-07-28 (see [`suspend`]).
//!
//! Each eval request becomes a [`crate::session::GovernedEval`]; this module adds only what is
//! MCP's: the tool listing (`listing`), the request's wait and suspension (`eval`, [`suspend`]),
//! progress notifications (`progress`), results ([`result`]), hot reload ([`reload`]), and the
//! `ServerHandler` routing ([`CodemodeServer`]).

mod eval;
mod handler;
mod listing;
mod progress;
pub mod reload;
pub mod result;
mod state;
pub mod suspend;

pub use handler::CodemodeServer;
pub use listing::{EVAL_TOOL, PROFILE_TOOL_PREFIX};
pub use state::ServerState;

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

/// Serves one client on stdin/stdout until it disconnects.
pub async fn serve_stdio(state: Arc<ServerState>) -> anyhow::Result<()> {
    let service = CodemodeServer::new(state)
        .serve(rmcp::transport::stdio())
        .await?;
    service.waiting().await?;
    Ok(())
}

/// Serves streamable HTTP at `http://ADDR/mcp`, many sessions at once, until `shutdown`.
/// Returns the bound address through `bound` (useful with port 0).
pub async fn serve_http(
    state: Arc<ServerState>,
    addr: SocketAddr,
    shutdown: CancellationToken,
    bound: Option<tokio::sync::oneshot::Sender<SocketAddr>>,
) -> anyhow::Result<()> {
    let factory_state = state.clone();
    let service = StreamableHttpService::new(
        move || Ok(CodemodeServer::new(factory_state.clone())),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default().with_cancellation_token(shutdown.child_token()),
    );
    let mut router = axum::Router::new().nest_service("/mcp", service);
    if state.config().approvals.http {
        // The approval API and page (`"approvals": {"http": true}`), with the same auth.
        router = router.merge(crate::approvals::http::router(
            state.approvals.clone(),
            Arc::new(crate::auth::NoAuth),
        ));
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tracing::info!("codemode serving MCP at http://{local}/mcp");
    if let Some(tx) = bound {
        let _ = tx.send(local);
    }
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
        .await?;
    Ok(())
}
