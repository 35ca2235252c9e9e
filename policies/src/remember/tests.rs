use std::time::Duration;

use serde_json::json;

use super::*;

#[test]
fn periods_are_spelled_in_their_largest_whole_unit() {
    let cases = [
        (Duration::from_secs(7 * 86_400), "7 days"),
        (Duration::from_secs(86_400), "1 day"),
        (Duration::from_secs(7200), "2 hours"),
        (Duration::from_secs(90 * 60), "90 minutes"),
        (Duration::from_secs(45), "45 seconds"),
        (Duration::from_millis(500), "500 ms"),
    ];
    for (period, want) in cases {
        assert_eq!(spell_period(period), want);
    }
}

#[test]
fn a_rule_id_names_exactly_what_was_approved() {
    let id = RememberedRule::id_of("alice", "p", "fs__write", "ab");
    assert!(is_rule_id(&id));
    for other in [
        RememberedRule::id_of("bob", "p", "fs__write", "ab"),
        RememberedRule::id_of("alice", "q", "fs__write", "ab"),
        RememberedRule::id_of("alice", "p", "fs__read", "ab"),
        RememberedRule::id_of("alice", "p", "fs__write", "ac"),
        // No field can bleed into the next.
        RememberedRule::id_of("alice\",\"p", "", "fs__write", "ab"),
    ] {
        assert_ne!(id, other);
    }
    assert!(!is_rule_id("../../state.key"));
    assert!(!is_rule_id(&id.to_uppercase()));
}

#[tokio::test]
async fn a_rule_whose_content_does_not_match_its_id_covers_nothing() {
    let store = Arc::new(MemoryRuleStore::default());
    let rules = RememberedRules::new(store.clone());
    let approved = Approved {
        caller: "alice",
        profile: "p",
        tool: "t",
        args: &json!({"a": 1}),
        risk: Risk::Medium,
        upstream: None,
        approved_by: None,
        approved_with: None,
        channel: Channel::Http,
    };
    let mut rule = rules
        .remember(approved, Duration::from_secs(60))
        .await
        .unwrap();
    assert!(
        rules
            .matching("alice", "p", "t", &json!({"a": 1}), Risk::Low)
            .await
            .unwrap()
            .is_some()
    );
    // A record altered under the same id (the store is trusted, but not to widen a rule).
    rule.args_sha256 = args_sha256(&json!({"a": 2}));
    store.put(&rule, Duration::from_secs(60)).await.unwrap();
    assert_eq!(
        rules
            .matching("alice", "p", "t", &json!({"a": 1}), Risk::Low)
            .await
            .unwrap(),
        None
    );
}

fn stored_rule(caller: &str) -> RememberedRule {
    RememberedRule {
        id: RememberedRule::id_of(caller, "p", "fs__write", "ab"),
        caller: caller.into(),
        profile: "p".into(),
        tool: "fs__write".into(),
        args_sha256: "ab".into(),
        risk: Risk::Medium,
        created_at: "2027-01-15T08:00:00Z".into(),
        created_at_ms: 0,
        expires_at_ms: u64::MAX,
        upstream: None,
        approved_by: None,
        approved_with: None,
        channel: Channel::Http,
    }
}

/// The process's rules do not pile up: a rule past the time it was kept for is gone from the
/// memory store (not merely filtered out when listed), as from the durable one.
#[tokio::test]
async fn the_memory_store_forgets_a_rule_once_its_time_is_up() {
    let store = MemoryRuleStore::default();
    let (old, new) = (stored_rule("alice"), stored_rule("bob"));
    store.put(&old, Duration::ZERO).await.unwrap();
    store.put(&new, Duration::from_secs(3600)).await.unwrap();
    assert_eq!(store.get(&old.id).await.unwrap(), None);
    assert_eq!(store.list().await.unwrap(), [new]);
    assert_eq!(store.lock().len(), 1);
}

/// A server's identity follows its command (or URL), not its environment or headers (which
/// rotate credentials); a tool of no configured server has none.
#[test]
fn an_upstream_is_identified_by_its_command_or_url() {
    let config = |servers: &str| {
        crate::Config::from_json_str(&format!(r#"{{"mcpServers": {servers}}}"#)).unwrap()
    };
    let a = config(r#"{"fs": {"command": "npx", "args": ["server-a"]}}"#);
    let a_env = config(r#"{"fs": {"command": "npx", "args": ["server-a"], "env": {"T": "2"}}}"#);
    let b = config(r#"{"fs": {"command": "npx", "args": ["server-b"]}}"#);
    let http = config(r#"{"fs": {"url": "https://a.example/mcp", "headers": {"X": "1"}}}"#);
    let id = |c: &crate::Config, tool: &str| upstream_identity(c, tool);
    assert!(id(&a, "fs__write").is_some());
    assert_eq!(id(&a, "fs__write"), id(&a_env, "fs__read"));
    assert_ne!(id(&a, "fs__write"), id(&b, "fs__write"));
    assert_ne!(id(&a, "fs__write"), id(&http, "fs__write"));
    assert_eq!((id(&a, "git__log"), id(&a, "search_tools")), (None, None));
}

/// A command tool's identity follows its program, argv template and working directory, so a
/// reload that points the name at another program (or other fixed arguments) ends its rules;
/// its environment does not count (as a server's).
#[test]
fn a_command_tool_is_identified_by_its_program_and_argv() {
    let config = |command: &str| {
        crate::Config::from_json_str(&format!(r#"{{"commands": {{"stamp": {command}}}}}"#)).unwrap()
    };
    let echo = config(r#"{"command": "echo", "args": ["ok"]}"#);
    let echo_env = config(r#"{"command": "echo", "args": ["ok"], "env": {"T": "2"}}"#);
    let other_args = config(r#"{"command": "echo", "args": ["--", "ok"]}"#);
    let other_program = config(r#"{"command": "true", "args": ["ok"]}"#);
    let in_tmp = config(r#"{"command": "echo", "args": ["ok"], "cwd": "/tmp"}"#);
    let id = |c: &crate::Config| upstream_identity(c, "stamp");
    assert!(id(&echo).is_some());
    assert_eq!(id(&echo), id(&echo_env));
    for changed in [&other_args, &other_program, &in_tmp] {
        assert_ne!(id(&echo), id(changed));
    }
    assert_eq!(upstream_identity(&echo, "other"), None);
}

/// A rule covers exactly the arguments whose canonical JSON was approved: the same object
/// built in another key order is covered; values that differ however slightly — another
/// Unicode normalisation, a float for an integer, `-0.0` for `0`, a JSON text with a duplicate
/// key inside a string, an invisible character — are not.
#[tokio::test]
async fn a_rule_covers_only_arguments_of_the_same_canonical_json() {
    let rules = RememberedRules::in_memory();
    let shown = json!({"name": "caf\u{e9}", "n": 0, "doc": "{\"x\":2}"});
    let approved = Approved {
        caller: "alice",
        profile: "p",
        tool: "t",
        args: &shown,
        risk: Risk::Medium,
        upstream: None,
        approved_by: None,
        approved_with: None,
        channel: Channel::Http,
    };
    rules
        .remember(approved, Duration::from_secs(60))
        .await
        .unwrap();
    let covered = |args: Value| {
        let rules = rules.clone();
        async move {
            rules
                .matching("alice", "p", "t", &args, Risk::Medium)
                .await
                .unwrap()
                .is_some()
        }
    };
    let reordered: Value =
        serde_json::from_str(r#"{"doc": "{\"x\":2}", "n": 0, "name": "caf\u00e9"}"#).unwrap();
    assert!(covered(reordered).await);
    for other in [
        json!({"name": "cafe\u{301}", "n": 0, "doc": "{\"x\":2}"}),
        json!({"name": "caf\u{e9}", "n": 0.0, "doc": "{\"x\":2}"}),
        json!({"name": "caf\u{e9}", "n": -0.0, "doc": "{\"x\":2}"}),
        json!({"name": "caf\u{e9}", "n": 0, "doc": "{\"x\":1,\"x\":2}"}),
        json!({"name": "caf\u{e9}\u{200b}", "n": 0, "doc": "{\"x\":2}"}),
        json!({"name": "caf\u{e9}", "n": 0, "doc": "{\"x\":2}", "extra": null}),
    ] {
        assert!(!covered(other.clone()).await, "{other}");
    }
}

/// A `rememberFor` past the end of the calendar (`"100000000d"`, which the config accepts)
/// records a rule that never expires in practice, and its expiry is written as the latest
/// time there is: remembering, auditing and listing it never panic.
#[tokio::test]
async fn a_rule_remembered_past_the_calendars_end_is_kept_without_panicking() {
    let rules = RememberedRules::in_memory();
    let args = json!({});
    let approved = Approved {
        caller: "alice",
        profile: "p",
        tool: "t",
        args: &args,
        risk: Risk::Medium,
        upstream: None,
        approved_by: None,
        approved_with: None,
        channel: Channel::Http,
    };
    let forever = Duration::from_secs(100_000_000 * 86_400);
    let rule = rules.remember(approved, forever).await.unwrap();
    assert_eq!(rule.expires_at(), "+262142-12-31T23:59:59.999Z");
    assert_eq!(rules.list().await.unwrap(), [rule]);
}
