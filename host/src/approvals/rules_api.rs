//! `GET /approvals/rules` and `DELETE /approvals/rules/{id}`: the remembered approvals listed
//! and revoked on the approval API, with the permission deciding needs (`approve`); revoking a
//! rule someone else gave at a level that named approvers also needs the approver permission
//! it was given with (a lesser approver cannot undo a higher one's decision).

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use codemode_policies::{Caller, RememberedRule, neutralize};
use serde_json::{Value, json};

use super::broker::{APPROVE_PERMISSION, ApprovalBroker};
use super::view::{ApiError, error};

/// A rule as the API shows it: its fields, the expiry also as RFC 3339, names neutralised.
pub(super) fn rule_view(rule: &RememberedRule) -> Value {
    json!({
        "id": rule.id,
        "caller": neutralize(&rule.caller),
        "profile": neutralize(&rule.profile),
        "tool": neutralize(&rule.tool),
        "args_sha256": rule.args_sha256,
        "risk": rule.risk.as_str(),
        "created_at": rule.created_at,
        "expires_at": rule.expires_at(),
        "approved_by": rule.approved_by.as_deref().map(neutralize),
        "channel": rule.channel.as_str(),
    })
}

pub(super) async fn list(
    State(broker): State<Arc<ApprovalBroker>>,
    Extension(caller): Extension<Caller>,
) -> Response {
    if let Err(e) = reader(&caller) {
        return e.into_response();
    }
    let Some(rules) = broker.rules() else {
        return axum::Json(json!({"rules": []})).into_response();
    };
    match rules.list().await {
        Ok(rules) => {
            let views: Vec<Value> = rules.iter().map(rule_view).collect();
            axum::Json(json!({"rules": views})).into_response()
        }
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, neutralize(&e.to_string())),
    }
}

pub(super) async fn revoke(
    State(broker): State<Arc<ApprovalBroker>>,
    Path(id): Path<String>,
    Extension(caller): Extension<Caller>,
) -> Response {
    if let Err(e) = reader(&caller) {
        return e.into_response();
    }
    let unknown = || {
        error(
            StatusCode::NOT_FOUND,
            format!("no remembered approval `{}`", neutralize(&id)),
        )
    };
    let Some(rules) = broker.rules() else {
        return unknown();
    };
    match rules.get(&id).await {
        Ok(Some(rule)) => {
            if let Err(e) = revoker(&caller, &rule) {
                return e.into_response();
            }
        }
        Ok(None) => return unknown(),
        Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, neutralize(&e.to_string())),
    }
    match rules.revoke(&id, Some(caller.name.clone()), "http").await {
        Ok(Some(_)) => axum::Json(json!({"status": "revoked"})).into_response(),
        Ok(None) => unknown(),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, neutralize(&e.to_string())),
    }
}

/// Reading needs the same permission as deciding: the arguments may be secrets.
pub(super) fn reader(caller: &Caller) -> Result<(), ApiError> {
    if !caller.has_permission(APPROVE_PERMISSION) {
        return Err(ApiError(
            StatusCode::FORBIDDEN,
            format!(
                "`{}` lacks the permission `{APPROVE_PERMISSION}`",
                caller.name
            ),
        ));
    }
    Ok(())
}

/// Revoking a rule someone else gave needs the approver permission it was given with, if any.
fn revoker(caller: &Caller, rule: &RememberedRule) -> Result<(), ApiError> {
    let own = rule.approved_by.as_deref() == Some(caller.name.as_str());
    match &rule.approved_with {
        Some(right) if !own && !caller.has_permission(right) => Err(ApiError(
            StatusCode::FORBIDDEN,
            format!(
                "`{}` cannot revoke rule {}: it was given by `{}` with the permission `{}`, which `{}` lacks",
                neutralize(&caller.name),
                rule.id,
                neutralize(rule.approved_by.as_deref().unwrap_or("-")),
                neutralize(right),
                neutralize(&caller.name)
            ),
        )),
        _ => Ok(()),
    }
}
