//! Approver rights by risk (`riskPolicies.<level>.approvers`) on the broker and the HTTP API:
//! an approver without the right sees the ask, marked not decidable, and every decision of
//! theirs is refused `403` naming the permission; the eval's own client, whose caller lacks the
//! right, is shown the ask but its approval leaves it waiting; an approver with the right
//! decides, and the right is recorded.

use std::sync::{Arc, Mutex};

use codemode_policies::{ApprovalDecision, Caller, Channel, RiskPolicy};
use codemode_runtime::BoxFuture;
use serde_json::{Value, json};

use super::broker::ApprovalBroker;
use super::tests::{approver_over, request, start_with_auth};
use super::{Answer, Ask, Asker, Reply};
use crate::auth::{AuthError, Authenticate};

/// Tokens `op` (may approve, not critical asks) and `lead` (may approve critical asks).
struct Rights;

impl Authenticate for Rights {
    fn authenticate(&self, headers: &::http::HeaderMap) -> Result<Caller, AuthError> {
        let token = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or(AuthError::Missing)?;
        Ok(match token {
            "op" => Caller::new("op", ["approve"]),
            "lead" => Caller::new("lead", ["approve", "approve:critical"]),
            _ => return Err(AuthError::Invalid("unknown token".into())),
        })
    }
    fn enabled(&self) -> bool {
        true
    }
}

/// The eval's own client: remembers the prompt, then answers "approve once" (which its caller
/// has no right to give).
#[derive(Default)]
struct EagerClient {
    prompt: Mutex<Option<(String, Value)>>,
}

impl Asker for EagerClient {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> Channel {
        Channel::Elicitation
    }
    fn ask(&self, ask: Ask) -> BoxFuture<'_, Reply> {
        Box::pin(async move {
            let offered = ask.question.schema["properties"]["decision"]["oneOf"].clone();
            *self.prompt.lock().unwrap() = Some((ask.question.message.clone(), offered));
            Reply::new(
                Answer::Accept(json!({"decision": "approve_once"})),
                Channel::Elicitation,
            )
        })
    }
}

async fn send(
    base: &str,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let client = codemode_upstream::crypto::http_client();
    let mut req = match method {
        "POST" => client
            .post(format!("{base}{path}"))
            .json(&body.unwrap_or_default()),
        "DELETE" => client.delete(format!("{base}{path}")),
        _ => client.get(format!("{base}{path}")),
    };
    req = req.bearer_auth(token);
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

const NEEDED: &str = "`op` cannot decide a critical-risk ask: it needs one of the permissions `approve:critical` (riskPolicies.critical.approvers)";

#[tokio::test]
async fn an_approver_without_the_right_sees_the_ask_but_cannot_decide_it() {
    let broker = Arc::new(ApprovalBroker::default());
    let base = start_with_auth(
        broker.clone(),
        Arc::new(Rights),
        codemode_config::ListenerLimits::default(),
    )
    .await;
    let req = request(RiskPolicy {
        approvers: vec!["approve:critical".into()],
        ..RiskPolicy::default()
    });
    let id = req.id.clone();
    let client = Arc::new(EagerClient::default());
    let approver = approver_over(client.clone(), &broker);
    let asking = tokio::spawn({
        let approver = approver.clone();
        async move { approver.approve(req).await }
    });
    // Listed once the client has answered: its approval did not end the ask.
    while client.prompt.lock().unwrap().is_none() || broker.pending().is_empty() {
        tokio::task::yield_now().await;
    }
    let (message, offered) = client.prompt.lock().unwrap().clone().unwrap();
    assert!(
        message.contains("You cannot approve it here: `agent` cannot decide a critical-risk ask"),
        "{message}"
    );
    assert_eq!(
        offered,
        json!([{"const": "decline", "title": "Decline"}, {"const": "cancel", "title": "Cancel"}])
    );

    let (status, listed) = send(&base, "GET", "/approvals", "op", None).await;
    assert_eq!(status, 200);
    let view = &listed["approvals"][0];
    assert_eq!(
        (
            &view["id"],
            &view["approvers"],
            &view["decidable"],
            &view["cannot_decide"]
        ),
        (
            &json!(id),
            &json!(["approve:critical"]),
            &json!(false),
            &json!(NEEDED)
        )
    );
    let (_, listed) = send(&base, "GET", "/approvals", "lead", None).await;
    assert_eq!(
        (
            &listed["approvals"][0]["decidable"],
            listed["approvals"][0].get("cannot_decide")
        ),
        (&json!(true), None)
    );
    let path = format!("/approvals/{id}");
    for decision in ["approve_once", "decline"] {
        assert_eq!(
            send(
                &base,
                "POST",
                &path,
                "op",
                Some(json!({"decision": decision}))
            )
            .await,
            (403, json!({"error": NEEDED})),
            "{decision}"
        );
    }
    assert_eq!(
        send(
            &base,
            "POST",
            &path,
            "lead",
            Some(json!({"decision": "approve_once"}))
        )
        .await,
        (200, json!({"status": "decided"}))
    );
    let answer = asking.await.unwrap();
    assert_eq!(
        (
            answer.decision,
            answer.channel,
            answer.decided_by.as_deref(),
            answer.decided_with.as_deref()
        ),
        (
            ApprovalDecision::ApproveOnce,
            Channel::Http,
            Some("lead"),
            Some("approve:critical")
        )
    );
    let (_, decided) = send(&base, "GET", "/approvals?state=decided", "op", None).await;
    assert_eq!(
        (
            &decided["approvals"][0]["decided_by"],
            &decided["approvals"][0]["decided_with"]
        ),
        (&json!("lead"), &json!("approve:critical"))
    );
}

/// Listing remembered rules needs `approve`; revoking one another approver gave at a level
/// naming approvers needs the permission it was given with.
#[tokio::test]
async fn revoking_a_rule_given_with_an_approver_right_needs_that_right() {
    use codemode_policies::{Approved, RememberedRules, Risk};
    let broker = Arc::new(ApprovalBroker::default());
    let rules = Arc::new(RememberedRules::in_memory());
    broker.set_rules(rules.clone());
    let base = start_with_auth(
        broker.clone(),
        Arc::new(Rights),
        codemode_config::ListenerLimits::default(),
    )
    .await;
    let give = |args: Value, by: &str, with: Option<&str>| {
        let rules = rules.clone();
        let (by, with) = (by.to_string(), with.map(str::to_string));
        async move {
            let approved = Approved {
                caller: "agent",
                profile: "p",
                tool: "fs__write",
                args: &args,
                risk: Risk::Critical,
                upstream: None,
                approved_by: Some(by),
                approved_with: with,
                channel: Channel::Http,
            };
            let rule = rules.remember(approved, std::time::Duration::from_secs(3600));
            rule.await.unwrap().id
        }
    };
    let critical = give(json!({"a": 1}), "lead", Some("approve:critical")).await;
    let plain = give(json!({"a": 2}), "lead", None).await;
    let (status, listed) = send(&base, "GET", "/approvals/rules", "op", None).await;
    assert_eq!(
        (status, listed["rules"].as_array().map(Vec::len)),
        (200, Some(2))
    );
    let path = format!("/approvals/rules/{critical}");
    assert_eq!(
        send(&base, "DELETE", &path, "op", None).await,
        (
            403,
            json!({"error": format!("`op` cannot revoke rule {critical}: it was given by `lead` with the permission `approve:critical`, which `op` lacks")})
        )
    );
    let plain_path = format!("/approvals/rules/{plain}");
    assert_eq!(
        send(&base, "DELETE", &plain_path, "op", None).await,
        (200, json!({"status": "revoked"}))
    );
    assert_eq!(
        send(&base, "DELETE", &path, "lead", None).await,
        (200, json!({"status": "revoked"}))
    );
    assert!(rules.list().await.unwrap().is_empty());
}
