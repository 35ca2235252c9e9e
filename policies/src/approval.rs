//! Approvals: what a human is asked about one call ([`ApprovalRequest`], put as an
//! [`Ask`](crate::Ask)), what comes back ([`ApprovalAnswer`]: a [`ApprovalDecision`], who
//! decided, why, through which [`Channel`]), what a parked call keeps of its ask
//! ([`ParkedAsk`]), and the approvals remembered for a session ([`SessionApprovals`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_runtime::{CallContext, EvalId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ApprovalDecision, Caller, MatchedBy, Risk, RiskPolicy};
use codemode_script::Preview;

/// What a human is asked about one call.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    /// The request's id: random (128 bits, hex), the same on every channel that shows it.
    pub id: String,
    /// The tool called.
    pub tool: String,
    /// The arguments in full (the summary is what a prompt shows first).
    pub args: Value,
    /// Every top-level key with a bounded, neutralised preview of its value (see
    /// [`crate::summarize_args`]).
    pub args_summary: String,
    /// The profile that asked.
    pub profile: Option<String>,
    /// The eval making the call.
    pub eval_id: EvalId,
    /// The call's number within the eval.
    pub call_id: u64,
    /// The client session (MCP), if any.
    pub session_id: Option<String>,
    /// Who the eval runs for.
    pub caller: Caller,
    /// The call's risk level.
    pub risk: Risk,
    /// The tool's class (`read`, `write`, `destructive`), shown on every channel.
    pub classification: crate::Class,
    /// What the human may answer at that risk.
    pub risk_policy: RiskPolicy,
    /// Which list entry or rule asked.
    pub matched: MatchedBy,
    /// The rule's reason, if a rule with a reason asked.
    pub reason: Option<String>,
    /// The other call sites of the script, found statically (context for the human).
    pub preview: Arc<Preview>,
    /// How long the human has before the call is denied (what is left of it, for a request
    /// asked again after its eval was resumed).
    pub timeout: Duration,
    /// The call being asked about: its eval's runtime context. An approver whose wait is
    /// dropped checks [`CallContext::is_parked`] to tell a parked eval (the request stays
    /// open, to be found again by its id) from one that ended (withdraw the request).
    pub call: CallContext,
    /// Whether this request was asked before, by an eval that was then parked and is now
    /// resumed: the same [`id`](Self::id), and perhaps an answer already given for it.
    pub resumed: bool,
}

/// What an asked call keeps of its question while its eval is parked (the note of its
/// [`CallContext::awaiting_human`] wait): the ask's id and when it expires. The ask is an
/// approval request (the policy layer's) or, with [`question`](Self::question) set, a step of
/// a `hitl_request` question (the host's): both are saved, listed and answered the same way.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ParkedAsk {
    /// The ask's id: the [`ApprovalRequest::id`], or the question step's.
    pub approval: String,
    /// When the ask's time ends, in milliseconds since the Unix epoch.
    pub deadline_ms: u64,
    /// Set when the ask is a question rather than an approval request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<ParkedQuestion>,
}

/// Which step of a `hitl_request` question a parked call waits on.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ParkedQuestion {
    /// The option already chosen, when the call waits on its confirmation step (which is not
    /// asked again, nor is the choice); `None` while the choice itself is pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected: Option<String>,
}

impl ParkedAsk {
    /// An approval request `id` with `timeout` left from now.
    pub fn approval(id: impl Into<String>, timeout: Duration) -> Self {
        ParkedAsk {
            approval: id.into(),
            deadline_ms: deadline_ms(timeout),
            question: None,
        }
    }

    /// A question step `id` with `timeout` left from now, the option already chosen when the
    /// step is the confirmation.
    pub fn question(id: impl Into<String>, timeout: Duration, selected: Option<String>) -> Self {
        ParkedAsk {
            question: Some(ParkedQuestion { selected }),
            ..Self::approval(id, timeout)
        }
    }

    /// The approval request a resumed call held, if its note is one.
    pub fn of(cx: &CallContext) -> Option<ParkedAsk> {
        Self::any_of(cx).filter(|ask| ask.question.is_none())
    }

    /// The question step a resumed call held, if its note is one.
    pub fn question_of(cx: &CallContext) -> Option<ParkedAsk> {
        Self::any_of(cx).filter(|ask| ask.question.is_some())
    }

    fn any_of(cx: &CallContext) -> Option<ParkedAsk> {
        serde_json::from_value(cx.resumed_note()?.clone()).ok()
    }

    /// The note to hold in [`CallContext::awaiting_human`].
    pub fn to_note(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// Time left before [`deadline_ms`](Self::deadline_ms), zero once past.
    pub fn remaining(&self) -> Duration {
        Duration::from_millis(self.deadline_ms.saturating_sub(now_ms()))
    }
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `timeout` from now, in milliseconds since the Unix epoch (saturating).
fn deadline_ms(timeout: Duration) -> u64 {
    now_ms().saturating_add(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX))
}

impl ApprovalRequest {
    /// A fresh [`ApprovalRequest::id`]: 128 random bits as 32 hex digits.
    pub fn new_id() -> String {
        new_request_id()
    }
}

/// A fresh [`ApprovalRequest::id`]: 128 random bits as 32 hex digits.
pub(crate) fn new_request_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: hash what differs between calls (still unguessable in practice;
        // an id is only valid while its request is pending).
        use sha2::Digest;
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let seed = format!("{:?}{n}{:p}", std::time::SystemTime::now(), &bytes);
        bytes.copy_from_slice(&sha2::Sha256::digest(seed.as_bytes())[..16]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Through which channel an answer came.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    /// The MCP client's elicitation (or its input-required retry).
    Elicitation,
    /// The HTTP approval API (or its web page).
    Http,
    /// The terminal of `codemode run`.
    Terminal,
    /// Nobody could be asked: the profile's `elicitationFallback`.
    Fallback,
    /// The policy itself (an approval remembered for the eval or session, a timeout).
    Policy,
}

impl Channel {
    /// The channel's name as the audit log writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Elicitation => "elicitation",
            Channel::Http => "http",
            Channel::Terminal => "terminal",
            Channel::Fallback => "fallback",
            Channel::Policy => "policy",
        }
    }
}

/// How a human answered an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalAnswer {
    /// The decision.
    pub decision: ApprovalDecision,
    /// Why, in the human's words (shown to the script on a decline, and audited).
    pub reason: Option<String>,
    /// Who decided, when the channel knows (an HTTP API token's name, `local`).
    pub decided_by: Option<String>,
    /// The permission of the risk level's `approvers` the decider held, when the channel
    /// checked one (the approval API); see [`crate::RiskPolicy::approver_right`].
    pub decided_with: Option<String>,
    /// Where the answer came from.
    pub channel: Channel,
    /// The choice the channel sent when it was none the form offered (as sent; a missing
    /// choice is empty). Such an answer approves nothing: its `decision` is a decline, and the
    /// script and the audit are told it was this, not a human's decline.
    pub not_offered: Option<String>,
}

impl ApprovalAnswer {
    /// `decision` through `channel`, with no reason and no named decider.
    pub fn new(decision: ApprovalDecision, channel: Channel) -> Self {
        ApprovalAnswer {
            decision,
            reason: None,
            decided_by: None,
            decided_with: None,
            channel,
            not_offered: None,
        }
    }

    /// `choice`, which the form did not offer, sent through `channel`: counted as a decline.
    pub fn not_offered(choice: impl Into<String>, channel: Channel) -> Self {
        let mut answer = ApprovalAnswer::new(ApprovalDecision::Decline, channel);
        answer.not_offered = Some(choice.into());
        answer
    }

    /// With a reason.
    pub fn with_reason(mut self, reason: Option<String>) -> Self {
        self.reason = reason;
        self
    }

    /// With the decider's name.
    pub fn decided_by(mut self, who: impl Into<String>) -> Self {
        self.decided_by = Some(who.into());
        self
    }
}

/// Tools approved "for the session": shared by the evals of one client session (a cheap clone
/// of an `Arc`).
///
/// An approval is keyed by (caller, profile, tool, rule): it covers later asks of the same
/// tool, by the same caller ([`Caller::name`]), under the same profile, from the same source —
/// an approval given when an `asklist` glob (or `defaultDisposition: "ask"`) asked covers every
/// later list-driven ask of that tool; one given when a rule asked covers only that rule,
/// since rules look at the arguments and the human approved one kind of arguments. So an
/// approval given in one profile never covers another profile's calls, and a second client
/// presenting the same session id under another identity does not inherit it. A `deny` is
/// never overridden.
///
/// It serialises as the list of its keys, so that the approvals remembered by an eval saved to
/// a durable store come back with it.
#[derive(Debug, Clone, Default)]
pub struct SessionApprovals {
    inner: Arc<Mutex<HashSet<ApprovalKey>>>,
}

impl Serialize for SessionApprovals {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut keys: Vec<ApprovalKey> = self.lock().iter().cloned().collect();
        keys.sort_by(|a, b| (&a.tool, &a.rule).cmp(&(&b.tool, &b.rule)));
        keys.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SessionApprovals {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let keys = Vec::<ApprovalKey>::deserialize(deserializer)?;
        Ok(SessionApprovals {
            inner: Arc::new(Mutex::new(keys.into_iter().collect())),
        })
    }
}

/// What one approval covers: a caller, a profile, a tool, and the rule that asked, if a rule
/// did — by its index and its content, so that an approval does not carry over to another rule
/// put at the same index by a config reload.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct ApprovalKey {
    caller: String,
    profile: Option<String>,
    tool: String,
    rule: Option<usize>,
    rule_content: Option<String>,
}

impl ApprovalKey {
    pub(crate) fn new(
        caller: &Caller,
        profile: Option<&str>,
        tool: &str,
        matched: &MatchedBy,
    ) -> Self {
        let rule = match matched {
            MatchedBy::Rule(i) => Some(*i),
            _ => None,
        };
        ApprovalKey {
            caller: caller.name.clone(),
            profile: profile.map(str::to_string),
            tool: tool.to_string(),
            rule,
            rule_content: None,
        }
    }

    /// The key of an ask of `tool` decided by `matched` in `profile`, bound to the deciding
    /// rule's content (see [`crate::Rule::fingerprint`]).
    pub(crate) fn for_profile(
        caller: &Caller,
        profile: &crate::Profile,
        tool: &str,
        matched: &MatchedBy,
    ) -> Self {
        let mut key = ApprovalKey::new(caller, Some(profile.name()), tool, matched);
        if let MatchedBy::Rule(i) = matched {
            key.rule_content = profile.rules().get(*i).map(crate::Rule::fingerprint);
        }
        key
    }
}

impl SessionApprovals {
    /// Nothing approved yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<ApprovalKey>> {
        // A set of strings cannot be left inconsistent by a panic.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn contains(&self, key: &ApprovalKey) -> bool {
        self.lock().contains(key)
    }

    pub(crate) fn insert(&self, key: ApprovalKey) {
        self.lock().insert(key);
    }

    /// The tools with an approval, sorted, without duplicates.
    pub fn tools(&self) -> Vec<String> {
        let mut tools: Vec<String> = self.lock().iter().map(|k| k.tool.clone()).collect();
        tools.sort_unstable();
        tools.dedup();
        tools
    }

    /// Whether nothing is approved.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Withdraws every approval of `tool`.
    pub fn revoke(&self, tool: &str) {
        self.lock().retain(|k| k.tool != tool);
    }

    /// Withdraws every approval.
    pub fn clear(&self) {
        self.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parked_note_tells_approvals_from_question_steps() {
        let approval = ParkedAsk::approval("a1", Duration::from_secs(60));
        let choice = ParkedAsk::question("q1", Duration::from_secs(60), None);
        let confirm = ParkedAsk::question("q2", Duration::from_secs(60), Some("yes".into()));
        // An approval's note is what it always was (saved states of earlier versions read).
        let note = approval.to_note();
        assert_eq!(
            note.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["approval", "deadline_ms"]
        );
        assert_eq!(choice.to_note()["question"], serde_json::json!({}));
        assert_eq!(
            confirm.to_note()["question"],
            serde_json::json!({"selected": "yes"})
        );
        let cx = |note: Value| CallContext::detached_resumed(EvalId(1), 1, note);
        assert_eq!(ParkedAsk::of(&cx(note.clone())), Some(approval.clone()));
        assert_eq!(ParkedAsk::question_of(&cx(note)), None);
        assert_eq!(ParkedAsk::of(&cx(choice.to_note())), None);
        assert_eq!(ParkedAsk::question_of(&cx(choice.to_note())), Some(choice));
        assert_eq!(
            ParkedAsk::question_of(&cx(confirm.to_note())),
            Some(confirm.clone())
        );
        assert_eq!(ParkedAsk::of(&CallContext::detached(EvalId(1), 1)), None);
        // The deadline carries: what is left, not a fresh timeout.
        let left = confirm.remaining();
        assert!(left <= Duration::from_secs(60) && left > Duration::from_secs(50));
        let past = ParkedAsk {
            deadline_ms: 1,
            ..approval
        };
        assert_eq!(past.remaining(), Duration::ZERO);
    }

    #[test]
    fn session_approvals_are_shared_and_scoped() {
        let a = SessionApprovals::new();
        let b = a.clone();
        let me = Caller::local();
        let key = |caller: &Caller, profile: &str, matched: MatchedBy| {
            ApprovalKey::new(caller, Some(profile), "fs__write", &matched)
        };
        let list = key(&me, "p", MatchedBy::Asklist("fs__*".into()));
        let rule = key(&me, "p", MatchedBy::Rule(0));
        a.insert(list.clone());
        assert!(b.contains(&list));
        // Any list glob, or the default disposition: the same key.
        assert!(b.contains(&key(&me, "p", MatchedBy::Asklist("*".into()))));
        assert!(b.contains(&key(&me, "p", MatchedBy::Default)));
        // Not another profile's, not another caller's, not a rule's.
        assert!(!b.contains(&key(&me, "q", MatchedBy::Asklist("fs__*".into()))));
        assert!(!b.contains(&key(
            &Caller::new("ci", ["x"]),
            "p",
            MatchedBy::Asklist("fs__*".into())
        )));
        assert!(!b.contains(&ApprovalKey::new(
            &me,
            None,
            "fs__write",
            &MatchedBy::Default
        )));
        assert!(!b.contains(&rule));
        b.insert(rule.clone());
        assert!(a.contains(&rule) && !a.contains(&key(&me, "q", MatchedBy::Rule(0))));
        assert!(!a.contains(&key(&me, "p", MatchedBy::Rule(1))));
        assert_eq!(a.tools(), ["fs__write"]);
        a.revoke("fs__write");
        assert!(b.is_empty());
        b.insert(list);
        b.clear();
        assert!(a.is_empty());
    }
}
