//! Approvals "from now on" (`riskPolicies.<level>.rememberFor`): a rule recorded by the answer
//! allows exactly the call the human saw, for the same caller and profile, until it expires or
//! is revoked; a deny still wins.

use std::sync::atomic::AtomicU64;

use super::*;
use crate::{AuditRecord, AuditSink, Caller, RememberedRules, RuleAction};

const HOUR_MS: u64 = 3_600_000;

fn remembering(extra: Value) -> Arc<Profile> {
    let mut v = json!({
        "asklist": ["fs__write"],
        "riskPolicies": {"medium": {"rememberFor": "1h"}}
    });
    if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
        v.extend(extra.clone());
    }
    profile(v)
}

/// Rules in memory, audited to `audit`, read against a clock the test moves.
fn rules(audit: &Arc<MemoryAuditSink>) -> (Arc<RememberedRules>, Arc<AtomicU64>) {
    let now = Arc::new(AtomicU64::new(1_800_000_000_000));
    let clock = now.clone();
    let sink: Arc<dyn AuditSink> = audit.clone();
    let rules = RememberedRules::in_memory()
        .with_audit(Arc::new(move || Some(sink.clone())))
        .with_clock(Arc::new(move || clock.load(Ordering::SeqCst)));
    (Arc::new(rules), now)
}

/// What every test here starts from: rules in memory, audited to `audit`, read against the
/// clock `now` the test moves, and a human who answers "from now on".
struct Fixture {
    audit: Arc<MemoryAuditSink>,
    rules: Arc<RememberedRules>,
    now: Arc<AtomicU64>,
    human: Arc<FakeApprover>,
}

impl Fixture {
    fn new() -> Self {
        let audit = Arc::new(MemoryAuditSink::new());
        let (rules, now) = rules(&audit);
        let human = FakeApprover::new(ApprovalDecision::ApproveRemember, Duration::ZERO);
        Fixture {
            audit,
            rules,
            now,
            human,
        }
    }

    /// A host of alice under `p`, asking `asker`, keeping its rules here.
    fn host(&self, p: Arc<Profile>, asker: Arc<dyn Asker>) -> (PolicyToolHost, Arc<AtomicUsize>) {
        self.host_for(p, "alice", asker)
    }

    /// A host of `caller` under `p`, asking `asker`, keeping its rules here.
    fn host_for(
        &self,
        p: Arc<Profile>,
        caller: &str,
        asker: Arc<dyn Asker>,
    ) -> (PolicyToolHost, Arc<AtomicUsize>) {
        host(p, caller, asker, Some(self.rules.clone()), &self.audit)
    }
}

/// A human who declines.
fn declining() -> Arc<FakeApprover> {
    FakeApprover::new(ApprovalDecision::Decline, Duration::ZERO)
}

fn host(
    p: Arc<Profile>,
    caller: &str,
    asker: Arc<dyn Asker>,
    rules: Option<Arc<RememberedRules>>,
    audit: &Arc<MemoryAuditSink>,
) -> (PolicyToolHost, Arc<AtomicUsize>) {
    let (calls, inner) = inner();
    let host = PolicyToolHost::builder(inner)
        .profile(Some(p))
        .asker(asker)
        .caller(Caller::new(caller, Vec::<String>::new()))
        .audit(audit.clone(), false)
        .remembered(rules)
        .build();
    (host, calls)
}

async fn write(h: &PolicyToolHost, path: &str) -> Result<Value, ToolError> {
    h.call(
        "fs__write",
        json!({"path": path}),
        &CallContext::detached(EvalId(1), 1),
    )
    .await
}

fn rule_records(audit: &MemoryAuditSink) -> Vec<crate::RuleAuditRecord> {
    audit
        .records()
        .into_iter()
        .filter_map(|r| match r {
            AuditRecord::Rule(r) => Some(r),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_answer_from_now_on_allows_exactly_that_call_without_asking() {
    let f = Fixture::new();
    let (first, _) = f.host(remembering(json!({})), f.human.clone());
    write(&first, "/x").await.unwrap();
    assert_eq!(f.human.asked(), 1);
    let request = f.human.requests.lock().unwrap()[0].clone();
    assert!(
        request
            .risk_policy
            .allowed_decisions()
            .contains(&ApprovalDecision::ApproveRemember)
    );
    let rule = f.rules.list().await.unwrap().remove(0);
    assert_eq!(
        (
            rule.caller.as_str(),
            rule.profile.as_str(),
            rule.tool.as_str()
        ),
        ("alice", "p", "fs__write")
    );
    assert_eq!(rule.args_sha256, args_sha256(&json!({"path": "/x"})));
    assert_eq!(rule.approved_by.as_deref(), Some("alice"));
    let created = &f.audit.tool_calls()[0];
    assert_eq!(
        created.decision_reason.as_deref(),
        Some(format!("remembered as rule {} until {}", rule.id, rule.expires_at()).as_str())
    );
    let records = rule_records(&f.audit);
    assert_eq!(records.len(), 1);
    assert_eq!(
        (
            records[0].action,
            records[0].rule_id.as_str(),
            records[0].channel.as_str()
        ),
        (RuleAction::Created, rule.id.as_str(), "elicitation")
    );

    // Another eval (another host, another session) of the same caller: not asked.
    let nobody = declining();
    let (second, calls) = f.host(remembering(json!({})), nobody.clone());
    write(&second, "/x").await.unwrap();
    assert_eq!((nobody.asked(), calls.load(Ordering::SeqCst)), (0, 1));
    let allowed = f.audit.tool_calls().pop().unwrap();
    assert_eq!(
        (
            allowed.decision,
            allowed.channel,
            allowed.decided_by.as_deref()
        ),
        (Decision::Approved, Some(Channel::Policy), Some("alice"))
    );
    assert_eq!(
        allowed.decision_reason.as_deref(),
        Some(
            format!(
                "remembered rule {} (approved via elicitation, until {})",
                rule.id,
                rule.expires_at()
            )
            .as_str()
        )
    );

    // Other arguments, another caller, another profile: asked as before (and declined here).
    let r = write(&second, "/y").await;
    assert_eq!(reason_of(&r), Some("elicitation_declined"));
    let (bob, _) = f.host_for(remembering(json!({})), "bob", nobody.clone());
    assert_eq!(
        reason_of(&write(&bob, "/x").await),
        Some("elicitation_declined")
    );
    let other = Arc::new(
        Profile::from_json(
            "q",
            &json!({"asklist": ["fs__write"], "riskPolicies": {"medium": {"rememberFor": "1h"}}}),
        )
        .unwrap(),
    );
    let (elsewhere, _) = f.host(other, nobody.clone());
    assert_eq!(
        reason_of(&write(&elsewhere, "/x").await),
        Some("elicitation_declined")
    );
    // A higher risk than the one approved: asked.
    let critical = remembering(
        json!({"risk": {"fs__write": "critical"}, "riskPolicies": {"medium": {"rememberFor": "1h"}, "critical": {"rememberFor": "1h"}}}),
    );
    let (riskier, _) = f.host(critical, nobody.clone());
    assert_eq!(
        reason_of(&write(&riskier, "/x").await),
        Some("elicitation_declined")
    );
    assert_eq!(nobody.asked(), 4);
}

#[tokio::test]
async fn a_rule_ends_at_its_expiry_and_on_revocation() {
    let f = Fixture::new();
    let (h, _) = f.host(remembering(json!({})), f.human.clone());
    write(&h, "/x").await.unwrap();
    write(&h, "/x").await.unwrap();
    assert_eq!(f.human.asked(), 1);
    // An hour later the rule is over: asked again (which remembers it anew).
    f.now.fetch_add(HOUR_MS, Ordering::SeqCst);
    assert!(f.rules.list().await.unwrap().is_empty());
    write(&h, "/x").await.unwrap();
    assert_eq!(f.human.asked(), 2);
    let id = f.rules.list().await.unwrap()[0].id.clone();
    let revoked = f
        .rules
        .revoke(&id, Some("ops".into()), "cli")
        .await
        .unwrap();
    assert_eq!(revoked.map(|r| r.id), Some(id.clone()));
    assert_eq!(f.rules.revoke(&id, None, "cli").await.unwrap(), None);
    assert_eq!(f.rules.revoke("../etc", None, "cli").await.unwrap(), None);
    write(&h, "/x").await.unwrap();
    assert_eq!(f.human.asked(), 3);
    let last = rule_records(&f.audit);
    let revocation = last
        .iter()
        .find(|r| r.action == RuleAction::Revoked)
        .unwrap();
    assert_eq!(
        (
            revocation.rule_id.as_str(),
            revocation.by.as_deref(),
            revocation.channel.as_str()
        ),
        (id.as_str(), Some("ops"), "cli")
    );
}

#[tokio::test]
async fn a_deny_wins_over_a_remembered_approval() {
    let f = Fixture::new();
    let (h, _) = f.host(remembering(json!({})), f.human.clone());
    write(&h, "/x").await.unwrap();
    // The profile, reloaded, denies the tool: the rule does not lift the deny.
    let denying = remembering(json!({"denylist": ["fs__write"]}));
    let (denied, calls) = f.host(denying, f.human.clone());
    assert_eq!(reason_of(&write(&denied, "/x").await), Some("denied"));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    // Nor does it apply once the level no longer remembers (`rememberFor` removed).
    let forgetting = profile(json!({"asklist": ["fs__write"]}));
    let decline = declining();
    let (asked, _) = f.host(forgetting, decline.clone());
    assert_eq!(
        reason_of(&write(&asked, "/x").await),
        Some("elicitation_declined")
    );
    assert_eq!(decline.asked(), 1);
}

#[tokio::test]
async fn from_now_on_is_offered_only_with_remember_for_and_a_place_to_keep_rules() {
    let audit = Arc::new(MemoryAuditSink::new());
    let (rules, _) = rules(&audit);
    let cases = [
        (
            profile(json!({"asklist": ["fs__write"]})),
            Some(rules.clone()),
        ),
        (remembering(json!({})), None),
    ];
    for (p, rules_here) in cases {
        let human = FakeApprover::new(ApprovalDecision::ApproveRemember, Duration::ZERO);
        let (h, calls) = host(p, "alice", human.clone(), rules_here, &audit);
        // The answer, not offered, is refused: a decline.
        assert_eq!(
            reason_of(&write(&h, "/x").await),
            Some("elicitation_declined")
        );
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        let request = human.requests.lock().unwrap()[0].clone();
        assert_eq!(request.risk_policy.remember_for, None);
        let form = request.question();
        assert!(
            !serde_json::to_string(&form.schema)
                .unwrap()
                .contains("approve_remember")
        );
    }
    assert!(rules.list().await.unwrap().is_empty());
    assert!(rule_records(&audit).is_empty());
}

/// A rule remembered while the call's risk level named no `approvers` covers nothing once it
/// does (a config reload): the answer was not given by one of them, so an approver is asked.
#[tokio::test]
async fn a_rule_not_given_by_an_approver_covers_nothing_once_the_level_names_approvers() {
    let f = Fixture::new();
    let (first, _) = f.host(remembering(json!({})), f.human.clone());
    write(&first, "/x").await.unwrap();
    assert_eq!(f.rules.list().await.unwrap().len(), 1);
    let supervised = remembering(json!({"riskPolicies": {"medium": {
        "rememberFor": "1h",
        "approvers": ["approve:medium"]
    }}}));
    let (second, calls) = f.host(supervised.clone(), f.human.clone());
    assert_eq!(reason_of(&write(&second, "/x").await), Some("permission"));
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // Given again by alice holding the right: that rule covers the call, whoever asks.
    let (calls, inner) = inner();
    let approver = PolicyToolHost::builder(inner)
        .profile(Some(supervised.clone()))
        .asker(f.human.clone())
        .caller(Caller::new("alice", ["approve:medium"]))
        .remembered(Some(f.rules.clone()))
        .build();
    write(&approver, "/x").await.unwrap();
    assert_eq!((f.human.asked(), calls.load(Ordering::SeqCst)), (2, 1));
    let rule = f.rules.list().await.unwrap().remove(0);
    assert_eq!(rule.approved_with.as_deref(), Some("approve:medium"));
    let (third, calls) = f.host(supervised, f.human.clone());
    write(&third, "/x").await.unwrap();
    assert_eq!((f.human.asked(), calls.load(Ordering::SeqCst)), (2, 1));
}

/// A config reload that shortens `rememberFor` shortens the rules already recorded: a rule
/// covers a call only within the level's current period of its creation.
#[tokio::test]
async fn a_shortened_remember_for_shortens_the_rules_already_recorded() {
    let f = Fixture::new();
    let (before, _) = f.host(remembering(json!({})), f.human.clone());
    write(&before, "/x").await.unwrap();
    let shortened = remembering(json!({"riskPolicies": {"medium": {"rememberFor": "10m"}}}));
    let (after, _) = f.host(shortened, f.human.clone());
    let minute = HOUR_MS / 60;
    f.now.fetch_add(9 * minute, Ordering::SeqCst);
    write(&after, "/x").await.unwrap();
    assert_eq!(f.human.asked(), 1, "within the new period: covered");
    f.now.fetch_add(2 * minute, Ordering::SeqCst);
    write(&after, "/x").await.unwrap();
    assert_eq!(
        f.human.asked(),
        2,
        "past the new period, within the old: asked"
    );
    // The earlier (longer) period still holds where the level still has it.
    write(&before, "/x").await.unwrap();
    assert_eq!(f.human.asked(), 2);
}

/// A rule a reload stops (here: the level's `rememberFor` removed) is not deleted: the reload
/// undone, it covers the call again until its own expiry (revoking ends it for good).
#[tokio::test]
async fn a_rule_a_reload_stopped_applies_again_once_the_reload_is_undone() {
    let f = Fixture::new();
    let (first, _) = f.host(remembering(json!({})), f.human.clone());
    write(&first, "/x").await.unwrap();
    let nobody = declining();
    let stopped = remembering(json!({"riskPolicies": {"medium": {}}}));
    let (stopped, _) = f.host(stopped, nobody.clone());
    assert_eq!(
        reason_of(&write(&stopped, "/x").await),
        Some("elicitation_declined")
    );
    assert_eq!(f.rules.list().await.unwrap().len(), 1, "still listed");
    let (undone, _) = f.host(remembering(json!({})), nobody.clone());
    write(&undone, "/x").await.unwrap();
    assert_eq!((f.human.asked(), nobody.asked()), (1, 1));
}

/// A rule records what identified the tool's upstream: once a reload gives the server's name
/// to another upstream, the rule covers nothing (the call is asked about, and a new answer
/// "from now on" records the new upstream).
#[tokio::test]
async fn a_rule_covers_nothing_once_its_server_name_means_another_upstream() {
    let f = Fixture::new();
    let upstream = Arc::new(Mutex::new("command-a".to_string()));
    let current = upstream.clone();
    let identity: crate::UpstreamIdentity = Arc::new(move |tool: &str| {
        tool.starts_with("fs__")
            .then(|| current.lock().unwrap().clone())
    });
    let (_, inner) = inner();
    let h = PolicyToolHost::builder(inner)
        .profile(Some(remembering(json!({}))))
        .asker(f.human.clone())
        .caller(Caller::new("alice", Vec::<String>::new()))
        .audit(f.audit.clone(), false)
        .remembered(Some(f.rules.clone()))
        .upstream_identity(Some(identity))
        .build();
    write(&h, "/x").await.unwrap();
    write(&h, "/x").await.unwrap();
    assert_eq!(f.human.asked(), 1);
    assert_eq!(
        f.rules.list().await.unwrap()[0].upstream.as_deref(),
        Some("command-a")
    );
    *upstream.lock().unwrap() = "command-b".to_string();
    write(&h, "/x").await.unwrap();
    assert_eq!(f.human.asked(), 2);
    assert_eq!(
        f.rules.list().await.unwrap()[0].upstream.as_deref(),
        Some("command-b")
    );
    write(&h, "/x").await.unwrap();
    assert_eq!(f.human.asked(), 2);
}
