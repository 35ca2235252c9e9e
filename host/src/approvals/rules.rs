//! Remembered approvals ([`RememberedRules`]) kept in the durable store, so that every node of
//! a cluster applies them and `codemode rules` reads what `serve` wrote: one sealed record
//! `rule:<id>` per rule, living as long as the rule.

use std::sync::Arc;
use std::time::Duration;

use codemode_policies::{RememberedRule, RememberedRules, RuleStore, RuleStoreError};
use codemode_runtime::BoxFuture;
use codemode_store::Store;

/// The store's key prefix of rules.
const PREFIX: &str = "rule:";

/// Rules in a durable [`Store`].
#[derive(Debug, Clone)]
pub struct StoredRules {
    store: Store,
}

impl StoredRules {
    /// Rules in `store`.
    pub fn new(store: Store) -> Self {
        StoredRules { store }
    }

    /// [`RememberedRules`] kept in `store`.
    pub fn remembered(store: Store) -> RememberedRules {
        RememberedRules::new(Arc::new(Self::new(store)))
    }

    fn failed(&self, e: impl std::fmt::Display) -> RuleStoreError {
        RuleStoreError::new(self.store.describe(), e)
    }

    fn parse(&self, bytes: &[u8]) -> Result<RememberedRule, RuleStoreError> {
        serde_json::from_slice(bytes).map_err(|e| self.failed(format!("a rule is unreadable: {e}")))
    }
}

impl RuleStore for StoredRules {
    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<RememberedRule>, RuleStoreError>> {
        Box::pin(async move {
            match self.store.get(&format!("{PREFIX}{id}")).await {
                Ok(Some(record)) => self.parse(&record.value).map(Some),
                Ok(None) => Ok(None),
                Err(e) => Err(self.failed(e)),
            }
        })
    }

    fn put<'a>(
        &'a self,
        rule: &'a RememberedRule,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), RuleStoreError>> {
        Box::pin(async move {
            let value = serde_json::to_vec(rule).map_err(|e| self.failed(e))?;
            self.store
                .put(&format!("{PREFIX}{}", rule.id), &value, ttl)
                .await
                .map_err(|e| self.failed(e))
        })
    }

    /// Every rule that opens and reads; one that does not (altered, sealed with another key,
    /// not a rule) is left in the store and skipped with a warning, so that it hides no other.
    fn list(&self) -> BoxFuture<'_, Result<Vec<RememberedRule>, RuleStoreError>> {
        Box::pin(async move {
            let listing = self.store.list(PREFIX).await.map_err(|e| self.failed(e))?;
            for e in &listing.unreadable {
                tracing::warn!(error = %e, "a remembered approval did not open; skipped");
            }
            let mut rules = Vec::with_capacity(listing.records.len());
            for record in &listing.records {
                match self.parse(&record.value) {
                    Ok(rule) => rules.push(rule),
                    Err(e) => tracing::warn!(
                        error = %e,
                        record = %record.key,
                        "a remembered approval is unreadable; skipped"
                    ),
                }
            }
            Ok(rules)
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, RuleStoreError>> {
        Box::pin(async move {
            self.store
                .delete(&format!("{PREFIX}{id}"))
                .await
                .map_err(|e| self.failed(e))
        })
    }
}

#[cfg(test)]
mod tests;
