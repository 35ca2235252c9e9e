use std::sync::Arc;
use std::time::Duration;

use codemode_policies::{Approved, Channel, RememberedRules, Risk};
use codemode_store::{LocalStore, StateKey, Store};
use serde_json::json;

use super::StoredRules;

/// A node's view of the store in `dir` (nodes of a cluster share the directory and the key).
fn node(dir: &std::path::Path) -> RememberedRules {
    StoredRules::remembered(store(dir, 5))
}

/// The store in `dir`, sealed with the key of bytes `key`.
fn store(dir: &std::path::Path, key: u8) -> Store {
    Store::new(
        Arc::new(LocalStore::open(dir, false).unwrap()),
        &StateKey::from_bytes([key; 32]),
    )
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

/// A record sealed with another key (another cluster's, a wrong `keyEnv`) or altered on disk
/// covers nothing (the call is asked about), is not listed and cannot be revoked, with an
/// error naming the store, never a panic; the rule stays for the nodes holding the key, and
/// its file is the user's alone.
#[tokio::test]
async fn a_foreign_key_or_an_altered_record_covers_nothing_and_loses_nothing() {
    let dir = codemode_test_support::scratch_dir("rules", "foreign_key");
    let args = json!({"n": 1});
    let rule = node(&dir)
        .remember(approved(&args), Duration::from_secs(3600))
        .await
        .unwrap();
    let foreign = StoredRules::remembered(store(&dir, 6));
    let found = foreign
        .matching("alice", "ops", "fs__write", &args, Risk::High)
        .await;
    let error = found.unwrap_err().to_string();
    assert!(
        error.starts_with("the remembered approvals in ") && error.contains("cannot be opened"),
        "{error}"
    );
    assert!(foreign.list().await.unwrap().is_empty());
    assert!(foreign.revoke(&rule.id, None, "cli").await.is_err());
    assert_eq!(
        node(&dir).list().await.unwrap(),
        std::slice::from_ref(&rule)
    );

    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.to_string_lossy().contains(&rule.id))
        .expect("the rule's record file");
    let mode = std::os::unix::fs::PermissionsExt::mode(&file.metadata().unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let mut sealed = std::fs::read(&file).unwrap();
    let last = sealed.len() - 1;
    sealed[last] ^= 1;
    std::fs::write(&file, sealed).unwrap();
    let altered = node(&dir);
    assert!(
        altered
            .matching("alice", "ops", "fs__write", &args, Risk::High)
            .await
            .is_err()
    );
    assert!(altered.list().await.unwrap().is_empty());
}

/// A record that opens but is no rule (written by a codemode of another format, or a bug)
/// is skipped by the listing: it hides no other rule from `codemode rules list` and
/// `GET /approvals/rules`, and covers nothing.
#[tokio::test]
async fn a_record_that_is_no_rule_hides_no_other_rule() {
    let dir = codemode_test_support::scratch_dir("rules", "not_a_rule");
    let args = json!({"n": 1});
    let rules = node(&dir);
    let rule = rules
        .remember(approved(&args), Duration::from_secs(3600))
        .await
        .unwrap();
    let bogus = "0123456789abcdef0123456789abcdef";
    store(&dir, 5)
        .put(
            &format!("rule:{bogus}"),
            b"{\"id\": 1}",
            Duration::from_secs(3600),
        )
        .await
        .unwrap();
    assert_eq!(rules.list().await.unwrap(), [rule]);
    let unreadable = rules.get(bogus).await.unwrap_err().to_string();
    assert!(unreadable.contains("a rule is unreadable"), "{unreadable}");
}
