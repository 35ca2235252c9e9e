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
use std::sync::Arc;

use rmcp::Peer;
use rmcp::service::RoleClient;
use tokio::sync::Mutex;

use codemode_runtime::ToolError;

use crate::connection::Upstream;
use crate::relay::CallRelays;
use crate::sequence::Sequence;
use crate::spec::UpstreamSpec;
use crate::transport::Session;

/// The connections of one eval to the servers that isolate their sessions, by server name.
/// Closed when the last clone drops (with the eval's [`CallScope`](crate::CallScope)).
#[derive(Clone, Default)]
pub struct EvalSessions(Arc<Mutex<HashMap<String, Private>>>);

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
    /// The eval's connection to `up`, opened now when it has none (or its last one closed, or
    /// was opened with a spec a reload has changed since).
    /// The eval's concurrent first calls wait for one opening.
    pub(crate) async fn lend(&self, up: &Upstream) -> Result<Lent, ToolError> {
        let mut sessions = self.0.lock().await;
        let open = sessions
            .get(&*up.name)
            .is_some_and(|p| p.spec == up.spec && !p.session.peer().is_transport_closed());
        if !open {
            let relays = Arc::new(CallRelays::default());
            let sequence = Arc::new(Sequence::default());
            let session = up.open_private(relays.clone(), sequence.clone()).await?;
            let private = Private {
                spec: up.spec.clone(),
                session,
                relays,
                sequence,
            };
            sessions.insert(up.name.to_string(), private);
        }
        let private = &sessions[&*up.name];
        Ok(Lent {
            peer: private.session.peer().clone(),
            relays: private.relays.clone(),
            sequence: private.sequence.clone(),
        })
    }
}
