//! `/healthz` and `/readyz` of a node whose store is a real Redis: served without credentials
//! and whatever the `Host` (a kubelet probes with the pod's IP), on the `--http` listener and on
//! the admin listener; `/readyz` turns not-ready while Redis is stopped and ready again once it
//! is back; an upstream that is down and a config reload that failed are reported but never
//! make the node unready.

use codemode_test_support::scratch_dir;
use codemode_test_support::services::{RedisServer, free_port};
use serde_json::{Value, json};

use crate::client::{block_on, get};
use crate::harness::{KEY, KEY_ENV, Node, await_some, write_json};

/// The `Host` a kubelet sends: the pod's IP, which is in no `allowedHosts`.
const POD_HOST: &str = "10.1.2.3:8080";
/// The bearer token `/mcp` demands.
const TOKEN: &str = "health-test-token";

/// `GET base/path` as a probe would send it: `(status, body as JSON)`.
fn probe(base: &str, path: &str) -> (u16, Value) {
    let (status, body) = block_on(get(&format!("{base}{path}"), Some(POD_HOST), None))
        .unwrap_or_else(|e| panic!("GET {base}{path}: {e}"));
    let body = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
    (status, body)
}

/// What `/readyz` says with the durable store's check `store` and the reload check `reload`.
fn readiness(store: &str, reload: &str) -> Value {
    let ready = store == "ok";
    json!({
        "status": if ready { "ready" } else { "not_ready" },
        "checks": {
            "config": "ok",
            "listener": "ok",
            "durable_store": store,
            "config_reload": reload,
            "upstreams": {"broken": "down"}
        }
    })
}

#[test]
fn readyz_follows_redis_and_probes_need_no_credentials() {
    let dir = scratch_dir("durable", "health");
    let mut redis = RedisServer::start(&dir.join("redis"));
    let config = dir.join("codemode.json");
    let body = json!({
        "mcpServers": {"broken": {"command": "false"}},
        "server": {"auth": {"tokens": [{"name": "ops", "env": "HEALTH_TEST_TOKEN"}]}},
        "durable": {"store": redis.url(0), "keyEnv": KEY_ENV}
    });
    write_json(&config, &body);
    let admin = format!("127.0.0.1:{}", free_port());
    let node = Node::start_with_args(
        "health",
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--config",
            config.to_str().expect("utf-8"),
            "--admin-http",
            &admin,
        ],
        &[(KEY_ENV, KEY), ("HEALTH_TEST_TOKEN", TOKEN)],
    );
    let bases = [node.base_url(), format!("http://{admin}")];

    // `/mcp` wants the token and a known Host; the probes want neither.
    let (status, _) = block_on(get(&node.mcp_url(), None, None)).expect("GET /mcp");
    assert_eq!(status, 401);
    for base in &bases {
        assert_eq!(
            probe(base, "/healthz"),
            (200, json!({"status": "ok"})),
            "{base}"
        );
    }
    // The upstream's first attempt fails: reported as down, and the node is ready all the same.
    for base in &bases {
        let ready = await_some("the upstream reported down", || {
            let answer = probe(base, "/readyz");
            (answer.1["checks"]["upstreams"]["broken"] == "down").then_some(answer)
        });
        assert_eq!(ready, (200, readiness("ok", "ok")), "{base}");
    }

    redis.stop();
    for base in &bases {
        let unready = await_some("/readyz says not ready", || {
            let answer = probe(base, "/readyz");
            (answer.0 == 503).then_some(answer)
        });
        assert_eq!(unready.1, readiness("unreachable", "ok"), "{base}");
        assert_eq!(
            probe(base, "/healthz"),
            (200, json!({"status": "ok"})),
            "{base}"
        );
    }

    redis.restart();
    for base in &bases {
        let ready = await_some("/readyz says ready again", || {
            let answer = probe(base, "/readyz");
            (answer.0 == 200).then_some(answer)
        });
        assert_eq!(ready.1, readiness("ok", "ok"), "{base}");
    }

    // A bad config push is reported, and the node stays ready.
    std::fs::write(&config, "{ \"limits\": {\"fuel\": \"lots\"} }").expect("write a bad config");
    let reported = await_some("the failed reload reported", || {
        let answer = probe(&bases[0], "/readyz");
        (answer.1["checks"]["config_reload"] == "failed").then_some(answer)
    });
    assert_eq!(reported, (200, readiness("ok", "failed")));
    // The node logs the refusal before it sets the flag `/readyz` reads, but its stderr reaches
    // `node.log()` through the harness's reader thread: the line is waited for there.
    await_some("the invalid config logged", || {
        node.log()
            .contains("changed but is invalid; keeping the running config")
            .then_some(())
    });
}
