use std::sync::Arc;
use std::time::Duration;

use codemode_policies::{Approved, Channel, RememberedRules, Risk};
use codemode_store::{LocalStore, StateKey, Store};
use serde_json::json;

use super::StoredRules;

/// A node's view of the store in `dir` (nodes of a cluster share the directory and the key).
fn node(dir: &std::path::Path) -> RememberedRules {
    StoredRules::remembered(Store::new(
        Arc::new(LocalStore::open(dir, false).unwrap()),
        &StateKey::from_bytes([5; 32]),
    ))
}

fn approved(args: &serde_json::Value) -> Approved<'_> {
    Approved {
        caller: "alice",
        profile: "ops",
        tool: "fs__write",
        args,
        risk: Risk::High,
        upstream: None,
        approved_by: Some("lead".into()),
        approved_with: None,
        channel: Channel::Http,
    }
}

#[tokio::test]
async fn a_rule_one_node_remembers_applies_on_another_until_revoked_there() {
    let dir = codemode_test_support::scratch_dir("rules", "two_nodes");
    let (a, b) = (node(&dir), node(&dir));
    let args = json!({"path": "/srv/x", "content": "1"});
    let rule = a
        .remember(approved(&args), Duration::from_secs(3600))
        .await
        .unwrap();
    let seen = b
        .matching("alice", "ops", "fs__write", &args, Risk::High)
        .await
        .unwrap();
    assert_eq!(seen.as_ref(), Some(&rule));
    assert_eq!(b.list().await.unwrap(), std::slice::from_ref(&rule));
    // Not wider than what was approved.
    let other = json!({"path": "/srv/x", "content": "2"});
    assert_eq!(
        b.matching("alice", "ops", "fs__write", &other, Risk::High)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        b.matching("mallory", "ops", "fs__write", &args, Risk::High)
            .await
            .unwrap(),
        None
    );
    assert!(b.revoke(&rule.id, None, "http").await.unwrap().is_some());
    assert_eq!(
        a.matching("alice", "ops", "fs__write", &args, Risk::High)
            .await
            .unwrap(),
        None
    );
    assert!(a.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_rule_past_its_expiry_covers_nothing_though_its_record_lives() {
    let dir = codemode_test_support::scratch_dir("rules", "expired");
    let args = json!({"n": 1});
    let rule = node(&dir)
        .remember(approved(&args), Duration::from_secs(3600))
        .await
        .unwrap();
    // Another node's clock is two hours on: the rule is over there, whatever the record's TTL.
    let later = node(&dir).with_clock(Arc::new(move || rule.expires_at_ms + 1));
    assert_eq!(
        later
            .matching("alice", "ops", "fs__write", &args, Risk::High)
            .await
            .unwrap(),
        None
    );
    assert!(later.list().await.unwrap().is_empty());
    assert_eq!(later.revoke(&rule.id, None, "cli").await.unwrap(), None);
}
