//! The MCP client's own elicitation: a server→client `elicitation/create` request, for clients
//! on protocol 2025-11-25 and older.

use std::time::Duration;

use codemode_policies::Channel;
use codemode_runtime::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::{Peer, RoleServer};
use serde_json::Value;

use super::{Answer, Ask, Asker, Question, Reply};

/// Clients on protocol 2025-11-25 and older: a server→client `elicitation/create` request.
#[derive(Clone)]
pub struct PeerAsker {
    peer: Peer<RoleServer>,
}

impl PeerAsker {
    /// Asks through this session's peer.
    pub fn new(peer: Peer<RoleServer>) -> Self {
        PeerAsker { peer }
    }
}

impl Asker for PeerAsker {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> Channel {
        Channel::Elicitation
    }
    fn ask(&self, ask: Ask) -> BoxFuture<'_, Reply> {
        Box::pin(async move {
            let answer = self.elicit(&ask.question, ask.timeout).await;
            Reply::new(answer, Channel::Elicitation)
        })
    }
}

impl PeerAsker {
    /// Puts `question` to the client, giving up after `timeout`.
    pub async fn elicit(&self, question: &Question, timeout: Duration) -> Answer {
        let params = match form_params(question) {
            Ok(p) => p,
            Err(e) => return Answer::Failed(format!("invalid question schema: {e}")),
        };
        match tokio::time::timeout(timeout, self.peer.create_elicitation(params)).await {
            Err(_) => Answer::Timeout,
            Ok(Err(e)) => Answer::Failed(e.to_string()),
            Ok(Ok(result)) => from_elicit_result(result.action, result.content),
        }
    }
}

/// The MCP form elicitation for `question`.
///
/// # Errors
/// In words, when its schema is not a form MCP allows (a flat object of primitives).
pub(crate) fn form_params(question: &Question) -> Result<ElicitRequestParams, String> {
    let schema =
        ElicitationSchema::from_json_schema(question.schema.clone()).map_err(|e| e.to_string())?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question.message.clone(),
        requested_schema: schema,
    })
}

/// Maps an elicitation result to an [`Answer`].
pub(crate) fn from_elicit_result(action: ElicitationAction, content: Option<Value>) -> Answer {
    match action {
        ElicitationAction::Accept => Answer::Accept(content.unwrap_or(Value::Null)),
        ElicitationAction::Decline => Answer::Decline,
        _ => Answer::Cancel,
    }
}
