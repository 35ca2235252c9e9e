//! Resource subscriptions through codemode (clients/subscriptions.py), with server-everything
//! as the upstream: a client subscribes by the mapped URI and hears the upstream's updates
//! under it; a resource the default profile hides, or a URI that is not codemode's, is refused
//! as not found (in a 2026-07-28 listen stream it is never subscribed, so only the visible one
//! is heard of); subscriptions are audited like reads; a restarted upstream is subscribed again.

use serde_json::json;

use crate::harness::{Mode, Setup, Transport, assert_json, base_config};

fn setup(name: &str) -> Setup {
    Setup::new(name, Transport::Http, |scratch| {
        let mut config = base_config(scratch);
        config["evaluation"]["defaultProfile"] = json!("docs");
        config["evaluation"]["profiles"]["docs"] = json!({
            "resources": {"deny": ["everything__demo://resource/static/document/extension.md"]},
        });
        config
    })
}

const DOC: &str = "codemode://everything/demo://resource/static/document/architecture.md";

/// The `fields` of each `access` record of the audit log, in order, once there are `count`.
fn access(setup: &Setup, fields: &[&str], count: usize) -> Vec<serde_json::Value> {
    setup
        .audit_once(&[("access", count)])
        .into_iter()
        .filter(|r| r["event"] == "access")
        .map(|r| fields.iter().map(|f| r[*f].clone()).collect())
        .collect()
}

/// What subscriptions.py observes in `scenario`, with the tapped `victim` upstream.
fn victim_scenario(name: &str, scenario: &str) -> serde_json::Value {
    let setup = Setup::new(name, Transport::Http, crate::upstream::with_victim);
    setup.python(
        "subscriptions.py",
        Mode::Legacy,
        &[("SCENARIO", std::path::Path::new(scenario))],
    )
}

#[test]
fn a_client_hears_an_upstream_resources_updates_on_2025_11_25() {
    let setup = setup("subscriptions_legacy");
    let obs = setup.python("subscriptions.py", Mode::Legacy, &[]);
    assert_json(
        "subscriptions over resources/subscribe",
        &obs,
        &json!({
            "subscribed": "no error",
            "hidden": "no resource `codemode://everything/demo://resource/static/document/extension.md`",
            "not_mapped": "`demo://resource/static/document/architecture.md` is not a resource of codemode: its resources are `codemode://<server>/<the upstream's URI>` (see resources/list)",
            "toggled": true,
            "heard": DOC,
            "more_refused": [255],
            "past_the_cap": "this session already watches 256 resources, the most codemode keeps for one; unsubscribe from one first",
            "after_letting_go": "no error",
            "too_long": "a resource URI of 9029 bytes is longer than the 8192 codemode subscribes to",
        }),
    );
    let access = access(
        &setup,
        &["method", "name", "decision", "reason"],
        3 + 256 + 4,
    );
    assert_eq!(access.len(), 3 + 256 + 1 + 1 + 1 + 1, "{access:?}");
    // The unsubscribe of DOC is audited too (before, it was not; red-team finding).
    assert_eq!(
        access[3 + 256 + 1],
        json!([
            "resources/unsubscribe",
            "everything__demo://resource/static/document/architecture.md",
            "allowed",
            null
        ])
    );
    assert_eq!(
        access.last().map(|r| (r[2].clone(), r[3].clone())),
        Some((
            json!("denied"),
            json!("a resource URI of 9029 bytes is longer than the 8192 codemode subscribes to")
        ))
    );
    assert_eq!(
        access[..3],
        [
            json!([
                "resources/subscribe",
                "everything__demo://resource/static/document/architecture.md",
                "allowed",
                null
            ]),
            json!([
                "resources/subscribe",
                "everything__demo://resource/static/document/extension.md",
                "denied",
                "the profile does not let this resource through"
            ]),
            json!([
                "resources/subscribe",
                "demo://resource/static/document/architecture.md",
                "denied",
                "not a resource of codemode"
            ]),
        ]
    );
}

#[test]
fn a_listen_stream_hears_an_upstream_resources_updates_on_2026_07_28() {
    let setup = setup("subscriptions_modern");
    let obs = setup.python("subscriptions.py", Mode::Auto, &[]);
    assert_json(
        "subscriptions in a listen stream",
        &obs,
        &json!({"toggled": true, "heard": [DOC, DOC]}),
    );
    // Each URI of the stream's `resourceSubscriptions` is audited like a subscribe (before,
    // none was; red-team finding).
    let access = access(
        &setup,
        &["method", "name", "decision", "status", "reason"],
        2,
    );
    assert_eq!(
        access,
        [
            json!([
                "subscriptions/listen",
                "everything__demo://resource/static/document/architecture.md",
                "allowed",
                "ok",
                null
            ]),
            json!([
                "subscriptions/listen",
                "everything__demo://resource/static/document/extension.md",
                "denied",
                "denied",
                "the profile does not let this resource through"
            ]),
        ]
    );
}

/// The upstream killed while a client is subscribed: codemode restarts it and subscribes its new
/// session again (a new session knows none), so the client goes on hearing its updates.
#[test]
fn a_restarted_upstream_is_subscribed_again() {
    let obs = victim_scenario("subscriptions_restart", "restart");
    assert_json(
        "a subscription across an upstream restart",
        &obs,
        &json!({"subscribes": 2, "toggled": true,
            "heard": "codemode://victim/demo://resource/static/document/architecture.md"}),
    );
}

/// A reload that keeps the upstream's name but changes its spec starts it anew, and subscribes
/// the new server to the resources its clients still watch (before, it started with none, and
/// the clients, still watching, heard nothing more).
#[test]
fn a_reload_that_changes_a_servers_spec_keeps_its_subscriptions() {
    let setup = Setup::new(
        "subscriptions_respec",
        Transport::Http,
        crate::upstream::with_victim,
    );
    let mut respec = crate::upstream::with_victim(&setup.scratch);
    respec["mcpServers"]["victim"]["env"] = json!({"CODEMODE_TEST_RESPEC": "1"});
    let v2 = setup.config_version("v2.json", &respec);
    let obs = setup.python(
        "subscriptions.py",
        Mode::Legacy,
        &[
            ("SCENARIO", std::path::Path::new("respec")),
            ("CODEMODE_CONFIG_V2", v2.as_path()),
        ],
    );
    assert_json(
        "a subscription across a reload that changes the server's spec",
        &obs,
        &json!({"subscribes": 2, "toggled": true,
            "heard": "codemode://victim/demo://resource/static/document/architecture.md"}),
    );
}

/// A session that closes without unsubscribing leaves nothing subscribed upstream once the
/// last other client lets the resource go (before, its watch lingered until an update came,
/// holding the upstream's subscription; red-team finding of the subscriptions change).
#[test]
fn an_abandoned_subscription_is_let_go_upstream() {
    let obs = victim_scenario("subscriptions_abandoned", "abandoned");
    // Whether the first session's close is seen before or after the second subscribes, every
    // upstream subscription is ended.
    let subscribes = obs["subscribes"].as_u64();
    assert!(matches!(subscribes, Some(1 | 2)), "{obs}");
    assert_eq!(obs["unsubscribes"].as_u64(), subscribes, "{obs}");
}

/// A session that closes without unsubscribing has its upstream subscription ended at once,
/// with no other client doing anything (before, it lingered until another client's subscribe,
/// unsubscribe or an update came; red-team finding): rmcp drops a session's handler when the
/// session closes, and that ends its watches.
#[test]
fn a_closed_sessions_subscription_is_let_go_upstream() {
    let obs = victim_scenario("subscriptions_closed", "closed");
    assert_json(
        "a closed session's subscription",
        &obs,
        &json!({"subscribes": 1, "unsubscribes": 1}),
    );
}

/// A session closed while one of its evals runs has its upstream subscription ended without
/// waiting for the eval: rmcp cancels the session's requests when it closes (after at most
/// 5 s for their responses), the eval request stops on that, and the session's handler goes
/// with it. The eval runs for minutes otherwise (its victim call lasts 10 minutes; the eval
/// timeout and the call timeout are 300 s, far past the client's 60 s wait).
#[test]
fn a_session_closed_mid_eval_lets_its_subscription_go() {
    let setup = Setup::new(
        "subscriptions_closed_mid_eval",
        Transport::Http,
        |scratch| {
            let mut config = crate::upstream::with_victim(scratch);
            config["limits"] = json!({ "timeout": "300s" });
            config["mcpServers"]["victim"]["timeoutSeconds"] = json!(300);
            config
        },
    );
    let obs = setup.python(
        "subscriptions.py",
        Mode::Legacy,
        &[("SCENARIO", std::path::Path::new("closed_mid_eval"))],
    );
    assert_json(
        "a session closed mid-eval",
        &obs,
        &json!({"closed": 202, "subscribes": 1, "unsubscribes": 1, "calls": 1}),
    );
}

/// A reload whose profile hides a subscribed resource silences it: each update is decided again
/// under the config in force (before, the client went on hearing it; red-team finding).
#[test]
fn a_reload_that_hides_a_subscribed_resource_silences_it() {
    let setup = Setup::new("subscriptions_reload", Transport::Http, |scratch| {
        let mut config = base_config(scratch);
        config["evaluation"]["defaultProfile"] = json!("docs");
        config["evaluation"]["profiles"]["docs"] = json!({});
        config
    });
    let mut hiding = base_config(&setup.scratch);
    hiding["evaluation"]["defaultProfile"] = json!("docs");
    hiding["evaluation"]["profiles"]["docs"] = json!({
        "resources": {"deny": ["everything__demo://resource/static/document/architecture.md"]},
    });
    let v2 = setup.config_version("v2.json", &hiding);
    let obs = setup.python(
        "subscriptions.py",
        Mode::Legacy,
        &[
            ("SCENARIO", std::path::Path::new("reload")),
            ("CODEMODE_CONFIG_V2", v2.as_path()),
        ],
    );
    let other = "codemode://everything/demo://resource/static/document/extension.md";
    assert_json(
        "updates after a reload that hides one",
        &obs,
        &json!({"heard": [other, other]}),
    );
}
