//! The approval API's side of parked evals: their open asks (approval requests and
//! `hitl_request` question steps) listed and decided on any node, answers given by a client's
//! retry, and the decisions kept for the resumed eval and for `GET /approvals?state=decided`.

use std::time::Duration;

use codemode_policies::{ApprovalAnswer, ApprovalDecision, Caller, Channel, is_blank, neutralize};
use codemode_runtime::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AskRecord, Durable};
use crate::approvals::broker::{Choice, DecideError, approver_of_view, may_decide};
use crate::approvals::view::{decision_name, parse_decision};
use crate::approvals::{Answer, Decided, Decisions, chosen_option};

/// Why a client's answer to an ask of a parked eval was not recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerRefused {
    /// The eval does not wait on this ask (never asked, or it closed), or the store cannot
    /// tell now.
    #[error("this eval does not wait on ask `{0}`")]
    NotAsked(String),
    /// Another answer came first.
    #[error("ask `{0}` was answered already")]
    Answered(String),
    /// The answer does not fit the ask (a question's answer that is not one of its options).
    #[error("{0}")]
    Invalid(String),
    /// The ask's time is up (its eval is about to be resumed to time the call out).
    #[error("ask `{0}` has run out of time")]
    Expired(String),
    /// The store cannot be reached: nothing was recorded (in words, naming the ask).
    #[error("{0}")]
    Unavailable(String),
}

/// A client's answer to one ask of a parked eval, checked and not yet recorded
/// ([`Durable::prepare`], [`Durable::record`]).
pub(crate) struct PreparedAnswer {
    id: String,
    decision: DecisionRecord,
    ttl: Duration,
}

/// `decision:<id>`: an answer given while the eval was parked.
#[derive(Serialize, Deserialize)]
struct DecisionRecord {
    decision: String,
    reason: Option<String>,
    decided_by: Option<String>,
    channel: Channel,
    /// The ask as the approval API showed it, for `GET /approvals?state=decided`.
    #[serde(default)]
    view: Value,
    /// When it was decided (RFC 3339 UTC).
    #[serde(default)]
    decided_at: String,
    /// A question's chosen option (`decision` is then `answer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer: Option<String>,
    /// Whether a resumed eval has taken it: a decision approves one call once.
    #[serde(default)]
    used: bool,
    /// An approval's choice the form did not offer, as sent (`decision` is then `decline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    not_offered: Option<String>,
    /// The permission of the ask's `approvers` the decider held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    decided_with: Option<String>,
}

impl DecisionRecord {
    /// The decided ask as the approval API shows decisions: the ask's view with `decision`,
    /// `decided_by`, `reason`, `channel` and `decided_at` (as the broker's decided entries).
    fn decided_view(self) -> Option<Value> {
        let Value::Object(mut view) = self.view else {
            return None;
        };
        view.insert("decision".into(), Value::String(self.decision));
        if let Some(by) = self.decided_by {
            view.insert("decided_by".into(), Value::String(by));
        }
        if let Some(reason) = self.reason {
            view.insert("reason".into(), Value::String(reason));
        }
        if let Some(answer) = self.answer {
            view.insert("answer".into(), Value::String(answer));
        }
        if let Some(right) = self.decided_with {
            view.insert("decided_with".into(), Value::String(right));
        }
        view.insert(
            "channel".into(),
            Value::String(self.channel.as_str().into()),
        );
        view.insert("decided_at".into(), Value::String(self.decided_at));
        Some(Value::Object(view))
    }
}

impl DecisionRecord {
    /// The record of an approval's `answer` to the ask shown as `view`.
    fn approval(answer: &ApprovalAnswer, view: Value) -> Self {
        DecisionRecord {
            decision: decision_name(answer.decision).to_string(),
            reason: answer.reason.clone(),
            decided_by: answer.decided_by.clone(),
            channel: answer.channel,
            view,
            decided_at: codemode_policies::AuditRecord::rfc3339_utc(std::time::SystemTime::now()),
            used: false,
            answer: None,
            not_offered: answer.not_offered.clone(),
            decided_with: answer.decided_with.clone(),
        }
    }

    /// The record of a question's answer (`None`: declined) to the ask shown as `view`.
    fn question(
        answer: Option<String>,
        (channel, decided_by, reason): (Channel, Option<String>, Option<String>),
        view: Value,
    ) -> Self {
        DecisionRecord {
            decision: if answer.is_some() {
                "answer"
            } else {
                "decline"
            }
            .to_string(),
            reason,
            decided_by,
            channel,
            view,
            decided_at: codemode_policies::AuditRecord::rfc3339_utc(std::time::SystemTime::now()),
            used: false,
            answer,
            not_offered: None,
            decided_with: None,
        }
    }
}

impl AskRecord {
    /// Whether this ask's time is up.
    fn expired(&self) -> bool {
        self.expires_ms != 0 && codemode_store::now_ms() >= self.expires_ms
    }

    /// A question step's options, `None` for an approval request.
    fn options(&self) -> Option<Vec<&str>> {
        if self.view.get("kind").and_then(Value::as_str) != Some("question") {
            return None;
        }
        Some(
            self.view
                .get("options")
                .and_then(Value::as_array)
                .map(|o| o.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default(),
        )
    }

    /// The option `answer` chose for this question step (`None`: declined).
    ///
    /// # Errors
    /// [`AnswerRefused::Invalid`] when it names no option, or one the step does not offer.
    fn chosen(&self, options: &[&str], answer: &Answer) -> Result<Option<String>, AnswerRefused> {
        let field = self.field.as_deref().unwrap_or("answer");
        chosen_option(field, options, answer).map_err(AnswerRefused::Invalid)
    }
}

impl Durable {
    /// Records a client's `answer` (through `channel`: a 2026-07-28 retry, a legacy
    /// elicitation) to ask `id` of the parked eval `token`: an approval request's decision, or
    /// a question step's option (checked to be one of its options).
    ///
    /// # Errors
    /// [`AnswerRefused`]: the eval does not wait on that ask, it was answered already, or the
    /// answer does not fit it; nothing is recorded then.
    pub async fn answer(
        &self,
        token: &str,
        id: &str,
        answer: &Answer,
        channel: Channel,
    ) -> Result<(), AnswerRefused> {
        let prepared = self.prepare(token, id, answer, channel).await?;
        self.record(prepared).await
    }

    /// [`answer`](Self::answer)'s checks alone: the answer as it would be recorded, nothing
    /// recorded yet — so that a retry answering several asks records none of them when one
    /// answer does not fit.
    ///
    /// # Errors
    /// [`AnswerRefused::NotAsked`], [`AnswerRefused::Invalid`] or
    /// [`AnswerRefused::Unavailable`], as [`answer`](Self::answer).
    pub async fn prepare(
        &self,
        token: &str,
        id: &str,
        answer: &Answer,
        channel: Channel,
    ) -> Result<PreparedAnswer, AnswerRefused> {
        let not_asked = || AnswerRefused::NotAsked(id.to_string());
        let record = match self.store.get(&format!("ask:{id}")).await {
            Ok(Some(record)) => record,
            Ok(None) => return Err(not_asked()),
            Err(e) => return Err(unrecorded(id, e)),
        };
        let ask = match serde_json::from_slice::<AskRecord>(&record.value) {
            Ok(ask) if ask.token == token => ask,
            _ => return Err(not_asked()),
        };
        if ask.expired() {
            return Err(AnswerRefused::Expired(id.to_string()));
        }
        let decision = match ask.options() {
            None => DecisionRecord::approval(&ApprovalAnswer::from_form(answer, channel), ask.view),
            Some(options) => {
                let chosen = ask.chosen(&options, answer)?;
                DecisionRecord::question(chosen, (channel, None, None), ask.view)
            }
        };
        Ok(PreparedAnswer {
            id: id.to_string(),
            decision,
            ttl: record.remaining(),
        })
    }

    /// Records an answer [`prepare`](Self::prepare) checked.
    ///
    /// # Errors
    /// [`AnswerRefused::Answered`] when another answer came first,
    /// [`AnswerRefused::Unavailable`] when the store cannot be reached.
    pub async fn record(&self, prepared: PreparedAnswer) -> Result<(), AnswerRefused> {
        match self
            .put_decision(&prepared.id, &prepared.decision, prepared.ttl)
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(AnswerRefused::Answered(prepared.id)),
            Err(e) => Err(unrecorded(&prepared.id, e)),
        }
    }

    /// Writes `decision` unless another is there: `Ok(false)` when one is (the first answer
    /// wins, as in the broker), `Err` when the store cannot say — never taken for "answered
    /// already", which would turn an outage into a refusal nobody can retry past.
    async fn put_decision(
        &self,
        id: &str,
        decision: &DecisionRecord,
        ttl: Duration,
    ) -> Result<bool, codemode_store::StoreError> {
        let value = serde_json::to_vec(decision).unwrap_or_default();
        let key = format!("decision:{id}");
        let ttl = ttl.max(Duration::from_secs(1));
        self.store.put_if_absent(&key, &value, ttl).await
    }

    /// The asks of every parked eval of the cluster, as the approval API shows them.
    ///
    /// # Errors
    /// When the store cannot be read, in words.
    pub(crate) async fn parked_asks(&self) -> Result<Vec<Value>, String> {
        let listing = self.store.list("ask:").await.map_err(unreachable_store)?;
        Ok(listing
            .records
            .iter()
            .filter_map(|record| serde_json::from_slice::<AskRecord>(&record.value).ok())
            .map(|ask| ask.view)
            .collect())
    }

    /// The decisions given to parked evals' asks (on any node, by the approval API or a
    /// client's retry), as the approval API shows decisions, newest first. Each is listed until
    /// its ask's approval time (and the records' grace period) is up.
    ///
    /// # Errors
    /// When the store cannot be read, in words.
    pub(crate) async fn decided_asks(&self) -> Result<Vec<Value>, String> {
        let listing = self
            .store
            .list("decision:")
            .await
            .map_err(unreachable_store)?;
        let mut views: Vec<Value> = listing
            .records
            .iter()
            .filter_map(|record| serde_json::from_slice::<DecisionRecord>(&record.value).ok())
            .filter_map(DecisionRecord::decided_view)
            .collect();
        views.sort_by(|a, b| b["decided_at"].as_str().cmp(&a["decided_at"].as_str()));
        Ok(views)
    }

    /// Decides ask `id` of a parked eval through the approval API — an approval request with a
    /// decision, a question step with one of its options or `decline` — then resumes the eval
    /// here.
    ///
    /// # Errors
    /// [`DecideError::NotFound`] when no parked eval has that ask; the others as
    /// [`crate::approvals::ApprovalBroker::decide`].
    pub async fn decide(
        &self,
        id: &str,
        decider: &Caller,
        choice: Choice,
        reason: Option<String>,
    ) -> Result<(), DecideError> {
        let unavailable = |e| DecideError::Unavailable(unreachable_store(e));
        let Some(record) = self
            .store
            .get(&format!("ask:{id}"))
            .await
            .map_err(unavailable)?
        else {
            // Its eval may have been resumed (the ask leaves the store then) by an answer given
            // just before: that is "already decided", not "no such ask".
            let decided = self
                .store
                .get(&format!("decision:{id}"))
                .await
                .map_err(unavailable)?;
            return Err(match decided {
                Some(_) => DecideError::Closed(id.to_string(), "decided"),
                None => DecideError::NotFound(id.to_string()),
            });
        };
        let ask: AskRecord = serde_json::from_slice(&record.value)
            .map_err(|_| DecideError::NotFound(id.to_string()))?;
        // As the live broker: once its time is up an ask is closed, though its record stays
        // until the sweep resumes the eval to time the call out.
        if ask.expired() {
            return Err(DecideError::Closed(id.to_string(), "expired"));
        }
        may_decide(
            decider,
            ask.view
                .get("caller")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        )?;
        let decided_with = approver_of_view(&ask.view, decider)?;
        let mut decision = decision_record(&ask, decider, choice, reason)?;
        decision.decided_with = decided_with;
        if !self
            .put_decision(id, &decision, record.remaining())
            .await
            .map_err(unavailable)?
        {
            return Err(DecideError::Closed(id.to_string(), "decided"));
        }
        self.resume_here(&ask.token);
        Ok(())
    }
}

impl Decisions for Durable {
    fn take(&self, id: &str) -> BoxFuture<'_, Option<Decided>> {
        let key = format!("decision:{id}");
        Box::pin(async move {
            // Kept, marked used, not taken: the record stays until its ask's time is up, so that
            // a second answer arriving after the resume is still refused as "already decided",
            // and the decided listing shows it. Marked used, so that an `eval:` record a store
            // writer puts back after the resume asks its human again instead of taking this
            // answer a second time (replay of both records at once is beyond sealing: see
            // SECURITY.md).
            let record = self.store.get(&key).await.ok()??;
            let mut d: DecisionRecord = serde_json::from_slice(&record.value).ok()?;
            if d.used {
                return None;
            }
            d.used = true;
            let used = serde_json::to_vec(&d).ok()?;
            self.store.put(&key, &used, record.remaining()).await.ok()?;
            if d.view.get("kind").and_then(Value::as_str) == Some("question") {
                return Some(Decided::Question {
                    answer: d.answer.filter(|_| d.decision == "answer"),
                    channel: d.channel,
                    decided_by: d.decided_by,
                });
            }
            let decision = parse_decision(&d.decision).unwrap_or(ApprovalDecision::Decline);
            let mut answer = ApprovalAnswer::new(decision, d.channel).with_reason(d.reason);
            answer.decided_by = d.decided_by;
            answer.not_offered = d.not_offered;
            answer.decided_with = d.decided_with;
            Some(Decided::Approval(answer))
        })
    }
}

impl crate::approvals::broker::ParkedAsks for Durable {
    fn list(&self) -> BoxFuture<'_, Result<Vec<Value>, String>> {
        Box::pin(self.parked_asks())
    }

    fn decided(&self) -> BoxFuture<'_, Result<Vec<Value>, String>> {
        Box::pin(self.decided_asks())
    }

    fn decide<'a>(
        &'a self,
        id: &'a str,
        decider: &'a Caller,
        choice: Choice,
        reason: Option<String>,
    ) -> BoxFuture<'a, Result<(), DecideError>> {
        Box::pin(Durable::decide(self, id, decider, choice, reason))
    }
}

/// Why a client's answer to ask `id` was not recorded when the store failed.
fn unrecorded(id: &str, e: codemode_store::StoreError) -> AnswerRefused {
    AnswerRefused::Unavailable(format!(
        "the durable store cannot be reached ({e}): the answer to ask `{id}` was not recorded; retry once the store is back"
    ))
}

/// What the approval API says when the store cannot be read.
fn unreachable_store(e: codemode_store::StoreError) -> String {
    format!(
        "the durable store cannot be reached ({e}): the asks of saved evals cannot be listed or decided until it is back"
    )
}

/// The decision `decider` gives ask `ask` with `choice` (and `reason`), as it is recorded.
///
/// # Errors
/// [`DecideError::Invalid`] when the choice does not fit the ask (a decision the ask does not
/// allow, a missing reason, an answer for an approval, an option the question does not offer).
fn decision_record(
    ask: &AskRecord,
    decider: &Caller,
    choice: Choice,
    reason: Option<String>,
) -> Result<DecisionRecord, DecideError> {
    let reason = reason.filter(|r| !is_blank(r));
    Ok(match (ask.options(), choice) {
        (None, Choice::Decision(decision)) => {
            let allowed: Vec<&str> = ask
                .view
                .get("allowed_decisions")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let name = decision_name(decision);
            if decision != ApprovalDecision::Decline && !allowed.contains(&name) {
                return Err(DecideError::Invalid(format!(
                    "`{name}` is not allowed for this ask (allowed: {})",
                    allowed.join(", ")
                )));
            }
            if ask.view.get("reason_required") == Some(&Value::Bool(true)) && reason.is_none() {
                return Err(DecideError::Invalid(
                    "this ask needs a reason with the decision".into(),
                ));
            }
            let answer = ApprovalAnswer::new(decision, Channel::Http)
                .with_reason(reason)
                .decided_by(decider.name.clone());
            DecisionRecord::approval(&answer, ask.view.clone())
        }
        (None, Choice::Answer(_)) => {
            return Err(DecideError::Invalid(
                "an approval request takes a decision, not an answer".into(),
            ));
        }
        (Some(_), Choice::Decision(ApprovalDecision::Decline | ApprovalDecision::Cancel)) => {
            DecisionRecord::question(
                None,
                (Channel::Http, Some(decider.name.clone()), reason),
                ask.view.clone(),
            )
        }
        (Some(_), Choice::Decision(_)) => {
            return Err(DecideError::Invalid(
                "a question takes `answer` with one of its options, or `decline`".into(),
            ));
        }
        (Some(options), Choice::Answer(a)) if !options.contains(&a.as_str()) => {
            return Err(DecideError::Invalid(format!(
                "`{}` is not one of the options",
                neutralize(&a)
            )));
        }
        (Some(_), Choice::Answer(a)) => DecisionRecord::question(
            Some(a),
            (Channel::Http, Some(decider.name.clone()), reason),
            ask.view.clone(),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ask(view: Value, field: Option<&str>) -> AskRecord {
        AskRecord {
            token: "t".into(),
            view,
            field: field.map(str::to_string),
            deadline_ms: 0,
            expires_ms: 0,
        }
    }

    #[test]
    fn a_question_steps_answer_must_name_one_of_its_options() {
        let approval = ask(
            json!({"kind": "approval", "allowed_decisions": ["decline"]}),
            None,
        );
        assert_eq!(approval.options(), None);
        let choice = ask(
            json!({"kind": "question", "options": ["ship", "hold"]}),
            Some("answer"),
        );
        let options = choice.options().unwrap();
        assert_eq!(options, ["ship", "hold"]);
        let chosen = |answer: Answer| choice.chosen(&options, &answer);
        assert_eq!(
            chosen(Answer::Accept(json!({"answer": "hold"}))),
            Ok(Some("hold".into()))
        );
        assert_eq!(chosen(Answer::Decline), Ok(None));
        assert_eq!(chosen(Answer::Cancel), Ok(None));
        assert_eq!(
            chosen(Answer::Accept(json!({"answer": "may\u{1b}be"}))),
            Err(AnswerRefused::Invalid(
                "`may\\u001bbe` is not one of the options (ship, hold)".into()
            ))
        );
        assert_eq!(
            chosen(Answer::Accept(json!({"confirm": "confirm"}))),
            Err(AnswerRefused::Invalid(
                "the answer names no option (expected `answer` with one of: ship, hold)".into()
            ))
        );
        assert!(matches!(
            chosen(Answer::Failed("x".into())),
            Err(AnswerRefused::Invalid(_))
        ));
        // The confirmation step's field.
        let confirm = ask(
            json!({"kind": "question", "options": ["confirm", "cancel"]}),
            Some("confirm"),
        );
        let options = confirm.options().unwrap();
        assert_eq!(
            confirm.chosen(&options, &Answer::Accept(json!({"confirm": "cancel"}))),
            Ok(Some("cancel".into()))
        );
    }

    #[test]
    fn a_required_reason_of_invisible_characters_is_no_reason() {
        let strict = ask(
            json!({"kind": "approval", "allowed_decisions": ["approve_once", "decline"],
                   "reason_required": true}),
            None,
        );
        let decider = Caller::new("op", ["approve"]);
        let decide = |reason: &str| {
            decision_record(
                &strict,
                &decider,
                Choice::Decision(ApprovalDecision::ApproveOnce),
                Some(reason.into()),
            )
            .map(|record| record.decision)
        };
        for blank in [
            "",
            " \t",
            "\u{200b}\u{3164}\u{e0020}\u{2060}",
            "\u{115f}\u{feff}\n",
        ] {
            assert_eq!(
                decide(blank),
                Err(DecideError::Invalid(
                    "this ask needs a reason with the decision".into()
                )),
                "{blank:?}"
            );
        }
        assert_eq!(
            decide("checked \u{200b}the diff"),
            Ok("approve_once".into())
        );
    }

    #[test]
    fn a_question_decision_is_listed_with_its_answer() {
        let view = json!({"id": "q1", "kind": "question", "options": ["a"]});
        let record = DecisionRecord::question(
            Some("a".into()),
            (Channel::Http, Some("carol".into()), None),
            view,
        );
        assert_eq!(record.decision, "answer");
        let listed = record.decided_view().unwrap();
        assert_eq!(
            (
                &listed["decision"],
                &listed["answer"],
                &listed["decided_by"],
                &listed["channel"]
            ),
            (
                &json!("answer"),
                &json!("a"),
                &json!("carol"),
                &json!("http")
            )
        );
        let declined =
            DecisionRecord::question(None, (Channel::Elicitation, None, None), json!({}));
        assert_eq!(
            (declined.decision.as_str(), declined.answer),
            ("decline", None)
        );
    }

    /// A local store whose writes fail while `down` (a Redis gone between a read and a write).
    #[derive(Debug)]
    struct Flaky {
        inner: codemode_store::LocalStore,
        down: std::sync::atomic::AtomicBool,
    }

    impl Flaky {
        fn check(&self) -> Result<(), codemode_store::StoreError> {
            if self.down.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(codemode_store::StoreError::new(
                    codemode_store::StoreErrorKind::Unavailable,
                    "connection refused",
                ));
            }
            Ok(())
        }
    }

    #[async_trait::async_trait]
    impl codemode_store::RecordStore for Flaky {
        fn describe(&self) -> &str {
            "flaky"
        }
        async fn put(
            &self,
            key: &str,
            value: Vec<u8>,
            ttl: Duration,
        ) -> Result<(), codemode_store::StoreError> {
            self.check()?;
            self.inner.put(key, value, ttl).await
        }
        async fn put_if_absent(
            &self,
            key: &str,
            value: Vec<u8>,
            ttl: Duration,
        ) -> Result<bool, codemode_store::StoreError> {
            self.check()?;
            self.inner.put_if_absent(key, value, ttl).await
        }
        async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, codemode_store::StoreError> {
            self.inner.get(key).await
        }
        async fn exists(&self, key: &str) -> Result<bool, codemode_store::StoreError> {
            self.inner.exists(key).await
        }
        async fn take(&self, key: &str) -> Result<Option<Vec<u8>>, codemode_store::StoreError> {
            self.check()?;
            self.inner.take(key).await
        }
        async fn delete(&self, key: &str) -> Result<bool, codemode_store::StoreError> {
            self.check()?;
            self.inner.delete(key).await
        }
        async fn list(
            &self,
            prefix: &str,
        ) -> Result<Vec<(String, Vec<u8>)>, codemode_store::StoreError> {
            self.inner.list(prefix).await
        }
    }

    /// The store goes down after a question's ask was read and before its answer is written:
    /// the approver on the API gets `503` in words, the client's retry "not recorded, retry" —
    /// not "already decided" / "answered already", which told them someone else had answered
    /// while nothing was recorded and the question stayed open. Once the store is back, the
    /// same answer is recorded.
    #[tokio::test]
    async fn an_answer_the_store_fails_to_write_is_not_called_already_given() {
        use codemode_store::RecordStore as _;
        let dir = codemode_test_support::scratch_dir("asks", "flaky_store");
        let flaky = std::sync::Arc::new(Flaky {
            inner: codemode_store::LocalStore::open(&dir, false).unwrap(),
            down: std::sync::atomic::AtomicBool::new(false),
        });
        let store = codemode_store::Store::new(
            flaky.clone(),
            &codemode_store::StateKey::from_bytes([7; 32]),
        );
        let durable = Durable::new(store, Duration::from_secs(0));
        let ask = AskRecord {
            token: "t".into(),
            view: json!({"id": "q1", "kind": "question", "caller": "bob", "options": ["ship", "hold"]}),
            field: Some("answer".into()),
            deadline_ms: 0,
            expires_ms: 0,
        };
        for id in ["q1", "q2"] {
            durable
                .store
                .put(
                    &format!("ask:{id}"),
                    &serde_json::to_vec(&ask).unwrap(),
                    Duration::from_secs(60),
                )
                .await
                .unwrap();
        }
        flaky.down.store(true, std::sync::atomic::Ordering::SeqCst);
        let ship = || Choice::Answer("ship".into());
        let decided = durable
            .decide("q1", &Caller::new("alice", ["approve"]), ship(), None)
            .await;
        assert_eq!(
            decided.map_err(|e| e.to_string()),
            Err("the durable store cannot be reached (connection refused): the asks of saved evals cannot be listed or decided until it is back".to_string())
        );
        let accept = Answer::Accept(json!({"answer": "hold"}));
        let answered = durable
            .answer("t", "q2", &accept, Channel::Elicitation)
            .await;
        assert_eq!(
            answered,
            Err(AnswerRefused::Unavailable(
                "the durable store cannot be reached (connection refused): the answer to ask `q2` was not recorded; retry once the store is back".into()
            ))
        );
        assert_eq!(flaky.inner.get("decision:q1").await.unwrap(), None);

        flaky.down.store(false, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            durable
                .decide("q1", &Caller::new("alice", ["approve"]), ship(), None)
                .await
                .map_err(|e| e.to_string()),
            Ok(())
        );
        assert_eq!(
            durable
                .answer("t", "q2", &accept, Channel::Elicitation)
                .await,
            Ok(())
        );
    }

    /// An answer after the ask's time is up — its record kept for the sweep's grace period — is
    /// refused as the live broker refuses it (`409` expired), not accepted for a call that then
    /// ends timed out (which left a decision listed that never took effect); another ask of the
    /// same eval whose time is not up is still answered.
    #[tokio::test]
    async fn an_answer_after_the_asks_time_is_refused_as_expired() {
        let dir = codemode_test_support::scratch_dir("asks", "expired");
        let store = codemode_store::Store::new(
            std::sync::Arc::new(codemode_store::LocalStore::open(&dir, false).unwrap()),
            &codemode_store::StateKey::from_bytes([9; 32]),
        );
        let durable = Durable::new(store, Duration::from_secs(0));
        let now = codemode_store::now_ms();
        for (id, expires_ms) in [("late", now - 1), ("open", now + 600_000)] {
            let ask = AskRecord {
                token: "t".into(),
                view: json!({"id": id, "kind": "question", "caller": "bob", "options": ["ship"]}),
                field: Some("answer".into()),
                deadline_ms: now - 1,
                expires_ms,
            };
            durable
                .store
                .put(
                    &format!("ask:{id}"),
                    &serde_json::to_vec(&ask).unwrap(),
                    Duration::from_secs(60),
                )
                .await
                .unwrap();
        }
        let alice = Caller::new("alice", ["approve"]);
        let ship = || Choice::Answer("ship".into());
        assert_eq!(
            durable
                .decide("late", &alice, ship(), None)
                .await
                .map_err(|e| e.to_string()),
            Err("approval request `late` was already expired".to_string())
        );
        let accept = Answer::Accept(json!({"answer": "ship"}));
        assert_eq!(
            durable
                .answer("t", "late", &accept, Channel::Elicitation)
                .await,
            Err(AnswerRefused::Expired("late".into()))
        );
        assert_eq!(durable.decided_asks().await.unwrap(), Vec::<Value>::new());
        assert_eq!(
            durable
                .decide("open", &alice, ship(), None)
                .await
                .map_err(|e| e.to_string()),
            Ok(())
        );
    }

    /// A hostile approver on the API, against the asks of a parked eval: the wrong kind of
    /// choice for the ask, an answer that is not an option (shown neutralised), a decider
    /// without `approve`, the asker deciding its own ask, a second answer — each refused in
    /// words, nothing recorded; the one valid answer is recorded once.
    #[tokio::test]
    async fn the_approval_api_refuses_what_does_not_fit_a_parked_ask() {
        let dir = codemode_test_support::scratch_dir("asks", "hostile_approver");
        let store = codemode_store::Store::new(
            std::sync::Arc::new(codemode_store::LocalStore::open(&dir, false).unwrap()),
            &codemode_store::StateKey::from_bytes([5; 32]),
        );
        let durable = Durable::new(store, Duration::from_secs(0));
        let asks = [
            (
                "q",
                json!({"id": "q", "kind": "question", "caller": "bob", "options": ["ship", "hold"]}),
            ),
            (
                "a",
                json!({"id": "a", "kind": "approval", "caller": "bob",
                       "allowed_decisions": ["approve_once", "decline"]}),
            ),
        ];
        for (id, view) in asks {
            let ask = AskRecord {
                token: "t".into(),
                view,
                field: (id == "q").then(|| "answer".to_string()),
                deadline_ms: 0,
                expires_ms: 0,
            };
            durable
                .store
                .put(
                    &format!("ask:{id}"),
                    &serde_json::to_vec(&ask).unwrap(),
                    Duration::from_secs(60),
                )
                .await
                .unwrap();
        }
        let alice = Caller::new("alice", ["approve"]);
        let decide = |id: &'static str, who: Caller, choice: Choice| {
            let durable = &durable;
            async move {
                durable
                    .decide(id, &who, choice, None)
                    .await
                    .map_err(|e| e.to_string())
            }
        };
        let answer = |a: &str| Choice::Answer(a.to_string());
        let approve = Choice::Decision(ApprovalDecision::ApproveOnce);
        let refused = [
            (
                decide("a", alice.clone(), answer("ship")).await,
                "an approval request takes a decision, not an answer",
            ),
            (
                decide("q", alice.clone(), approve).await,
                "a question takes `answer` with one of its options, or `decline`",
            ),
            (
                decide("q", alice.clone(), answer("ship\u{202e}")).await,
                "`ship\\u202e` is not one of the options",
            ),
            (
                decide("q", Caller::new("mallory", ["read"]), answer("ship")).await,
                "`mallory` lacks the permission `approve`",
            ),
            (
                decide("q", Caller::new("bob", ["approve"]), answer("ship")).await,
                "`bob` cannot decide its own ask without the permission `approve_self`",
            ),
        ];
        for (got, want) in refused {
            assert_eq!(got, Err(want.to_string()));
        }
        assert_eq!(durable.decided_asks().await.unwrap(), Vec::<Value>::new());
        assert_eq!(decide("q", alice.clone(), answer("hold")).await, Ok(()));
        assert_eq!(
            decide("q", alice.clone(), answer("ship")).await,
            Err("approval request `q` was already decided".to_string())
        );
        let decided = durable.decided_asks().await.unwrap();
        let listed: Vec<(&Value, &Value, &Value)> = decided
            .iter()
            .map(|d| (&d["id"], &d["answer"], &d["decided_by"]))
            .collect();
        assert_eq!(listed, [(&json!("q"), &json!("hold"), &json!("alice"))]);
    }
}
