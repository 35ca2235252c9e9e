//! Sampling for a 2026-07-28 client, which takes no requests from a server: an upstream's
//! `sampling/createMessage` (once the eval's profile, and maybe a human, allowed it) becomes an
//! input request of the eval's input-required result, under a key of its own, and the client's
//! model answers in the retry's `inputResponses` (the MCP SDKs' multi-round-trip drivers
//! dispatch it to their sampling callback). The question is withdrawn when its upstream call
//! ends first.

#![expect(
    deprecated,
    reason = "SEP-2577 deprecates sampling from protocol 2026-07-28 on, but its input requests still carry it, and a proxy forwards an upstream's"
)]

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, InputRequest,
};
use rmcp::service::ServiceError;
use serde_json::Value;
use tokio::sync::oneshot;

use codemode_runtime::BoxFuture;

use super::{Suspended, Withdraw, random_token};
use crate::tools::ClientModel;

impl ClientModel for Suspended {
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, ServiceError>> {
        Box::pin(async move {
            // A random key per request: a client cannot answer one before it is asked.
            let key = format!("codemode-sampling-{}", random_token());
            let (reply, response) = oneshot::channel();
            let request = InputRequest::CreateMessage(CreateMessageRequest::new(params));
            self.lock().messages.insert(key.clone(), (request, reply));
            self.changed.notify_waiters();
            let _withdraw = Withdraw {
                suspended: self,
                key: &key,
                from: |state, key| drop(state.messages.remove(key)),
            };
            match response.await {
                Ok(response) => parse(response),
                Err(_) => Err(ServiceError::McpError(McpError::internal_error(
                    "the sampling request was withdrawn",
                    None,
                ))),
            }
        })
    }
}

/// The client's response: its model's message, or the error it answered with.
fn parse(response: Value) -> Result<CreateMessageResult, ServiceError> {
    match serde_json::from_value::<CreateMessageResult>(response.clone()) {
        Ok(result) => Ok(result),
        Err(e) => Err(ServiceError::McpError(
            serde_json::from_value::<McpError>(response).unwrap_or_else(|_| {
                McpError::invalid_params(
                    format!("the client's answer to the sampling request is not a message: {e}"),
                    None,
                )
            }),
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmcp::model::{Role, SamplingMessage};
    use serde_json::json;

    use super::*;
    use crate::server::suspend::{Event, Suspensions};

    /// The one sampling request of the eval's next input-required result, by key.
    async fn asked(entry: &Suspended) -> (String, Value) {
        let Event::Input(requests) = entry.next_event().await else {
            panic!("the eval should wait for input");
        };
        let (key, request) = requests.into_iter().next().expect("one request");
        (key, serde_json::to_value(request).unwrap())
    }

    #[tokio::test]
    async fn a_sampling_request_is_an_input_request_answered_by_the_retry() {
        let suspensions = Suspensions::default();
        let (entry, _claim) = suspensions.register("eval", "local");
        let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("ping")], 16);
        let model: Arc<dyn ClientModel> = entry.clone();
        let sampled = tokio::spawn({
            let (model, params) = (model.clone(), params.clone());
            async move { model.create_message(params).await }
        });
        let (key, request) = asked(&entry).await;
        assert!(key.starts_with("codemode-sampling-"), "{key}");
        assert_eq!(request["method"], "sampling/createMessage");
        assert_eq!(request["params"]["maxTokens"], 16);
        // An answer that is not a message fails the request (the upstream is told why).
        let refused = entry.answer(
            &[(key.clone(), json!({"nonsense": true}))]
                .into_iter()
                .collect(),
        );
        assert!(refused.is_empty());
        let Err(ServiceError::McpError(e)) = sampled.await.unwrap() else {
            panic!("a malformed answer is an error");
        };
        assert!(
            e.message
                .starts_with("the client's answer to the sampling request is not a message"),
            "{}",
            e.message
        );
        // The model's message goes back as it is; a key asked no more is refused.
        let sampled = tokio::spawn(async move { model.create_message(params).await });
        let (second, _) = asked(&entry).await;
        assert_ne!(second, key, "a key of its own per request");
        let message = json!({"role": "assistant", "content": {"type": "text", "text": "pong"},
            "model": "m", "stopReason": "endTurn"});
        let responses = [(second, message), (key.clone(), json!({}))]
            .into_iter()
            .collect();
        assert_eq!(entry.answer(&responses), [key]);
        let result = sampled.await.unwrap().expect("the model's message");
        assert_eq!(result.model, "m");
        assert_eq!(result.message.role, Role::Assistant);
    }
}
