//! `isolateSessions`: an eval's calls to such a server go over a connection of the eval's own
//! (a child process of its own for a stdio server, an MCP session of its own over HTTP), opened
//! at its first call there and closed when the eval ends.
//!
//! For servers that ask questions over stdio, whose requests carry nothing that says which call
//! they are about: on an eval's own connection every request is that eval's
//! ([`crate::server_requests`]). It also keeps one eval's server-side state (a browser page, a
//! working directory) away from another's. The server's shared connection still lists its
//! tools, resources and prompts and serves clients' own requests.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use rmcp::Peer;
use rmcp::service::RoleClient;

use codemode_runtime::ToolError;

use crate::relay::CallRelays;
use crate::sequence::Sequence;
use crate::spec::UpstreamSpec;
use crate::transport::Session;

/// The connections of one eval to the servers that isolate their sessions, by server name.
/// Closed when the last clone drops (with the eval's [`CallScope`](crate::CallScope)).
#[derive(Clone, Default)]
pub(crate) struct EvalSessions(Arc<std::sync::Mutex<HashMap<String, Slot>>>);

/// One server's place among an eval's connections: locked while the connection opens, so that
/// the eval's concurrent first calls there wait for one opening — and only calls there (a
/// server slow to start holds up no other server's calls).
type Slot = Arc<tokio::sync::Mutex<Option<Private>>>;

impl std::fmt::Debug for EvalSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EvalSessions")
    }
}

/// One eval's connection to one server, with its own calls and notification order.
struct Private {
    /// The server's spec it was opened with: after a reload that changed it, the eval's next
    /// call opens a connection of the new spec (this one closes), as the shared one does.
    spec: UpstreamSpec,
    session: Session,
    relays: Arc<CallRelays>,
    sequence: Arc<Sequence>,
}

/// What a call on an eval's own connection needs of it.
pub(crate) struct Lent {
    pub(crate) peer: Peer<RoleClient>,
    pub(crate) relays: Arc<CallRelays>,
    pub(crate) sequence: Arc<Sequence>,
}

impl EvalSessions {
    /// The eval's connection to `server`, opened now by `open` (its calls recorded in the
    /// relays given, its notifications ordered by the sequence given) when it has none, its
    /// last one closed, or it was opened with a spec other than `spec` (a reload changed it). The eval's concurrent first calls there wait for one opening; its calls to
    /// other servers do not.
    pub(crate) async fn lend<F, Fut>(
        &self,
        (server, spec): (&str, &UpstreamSpec),
        open: F,
    ) -> Result<Lent, ToolError>
    where
        F: FnOnce(Arc<CallRelays>, Arc<Sequence>) -> Fut,
        Fut: Future<Output = Result<Session, ToolError>>,
    {
        let slot = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(server.to_string())
            .or_default()
            .clone();
        let mut slot = slot.lock().await;
        // A closed or outdated connection is dropped here, its process ending before another
        // starts.
        let private = match slot
            .take()
            .filter(|p| p.spec == *spec && !p.session.peer().is_transport_closed())
        {
            Some(open) => open,
            None => {
                let relays = Arc::new(CallRelays::default());
                let sequence = Arc::new(Sequence::default());
                let session = open(relays.clone(), sequence.clone()).await?;
                Private {
                    spec: spec.clone(),
                    session,
                    relays,
                    sequence,
                }
            }
        };
        let lent = Lent {
            peer: private.session.peer().clone(),
            relays: private.relays.clone(),
            sequence: private.sequence.clone(),
        };
        *slot = Some(private);
        Ok(lent)
    }
}
