//! docs/DEPLOYMENT.md's Kubernetes example, as far as it can be run without a cluster: the
//! ConfigMap's `codemode.json` and the Deployment's command line and environment, read from the
//! document itself, start a node on all addresses against a real Redis; the node then behaves as
//! the document says (bearer token required, only the Service's host names served, the approval
//! API on, waiting evals saved to Redis).

use std::path::Path;

use codemode_test_support::peers;
use codemode_test_support::scratch_dir;
use codemode_test_support::services::RedisServer;
use serde_json::{Value, json};

use crate::client::block_on;
use crate::harness::{KEY, Node, write_json};

/// The document's Kubernetes manifests: the ```yaml block under `### Kubernetes`.
fn manifests() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/DEPLOYMENT.md");
    let doc = std::fs::read_to_string(&path).expect("read docs/DEPLOYMENT.md");
    let section = doc
        .split_once("### Kubernetes")
        .expect("DEPLOYMENT.md has a Kubernetes section")
        .1;
    let block = section
        .split_once("```yaml\n")
        .expect("the Kubernetes section has a yaml block")
        .1;
    block
        .split_once("\n```")
        .expect("the yaml block ends")
        .0
        .to_string()
}

/// The ConfigMap's `codemode.json: |` block scalar, dedented.
fn config_map_json(manifests: &str) -> Value {
    let mut lines = manifests.lines();
    let opener = lines
        .by_ref()
        .find(|l| l.trim_start().starts_with("codemode.json: |"))
        .expect("the ConfigMap has codemode.json");
    let outer = opener.len() - opener.trim_start().len();
    let body: Vec<&str> = lines
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > outer)
        .collect();
    let indent = body
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .expect("codemode.json is not empty");
    let text: String = body
        .iter()
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("codemode.json is not JSON ({e}):\n{text}"))
}

/// The codemode container's `args:` (a flow sequence of quoted strings, which is JSON).
fn container_args(manifests: &str) -> Vec<String> {
    let line = manifests
        .lines()
        .find(|l| l.trim_start().starts_with("args: [\"serve\""))
        .expect("the Deployment gives codemode's args");
    let list = line.trim_start().trim_start_matches("args:").trim();
    serde_json::from_str(list).unwrap_or_else(|e| panic!("args are not a list ({e}): {line}"))
}

/// The environment variables the container takes from the Secret (`- { name: X, valueFrom: …}`).
fn secret_env_names(manifests: &str) -> Vec<String> {
    manifests
        .lines()
        .filter(|l| l.contains("secretKeyRef"))
        .map(|l| {
            l.split_once("name:")
                .and_then(|(_, rest)| rest.split_once(','))
                .map(|(name, _)| name.trim().to_string())
                .unwrap_or_else(|| panic!("an env entry without a name: {l}"))
        })
        .collect()
}

/// The Deployment's probe lines and the pod's Prometheus annotations, trimmed.
fn probe_lines(manifests: &str) -> Vec<&str> {
    manifests
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("Probe:") || l.starts_with("prometheus.io/"))
        .collect()
}

/// A request to the node with `host` as the `Host` header and `token` as the bearer token.
async fn post_eval(node: &Node, host: &str, token: Option<&str>, code: &str) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "eval",
        "arguments": {"code": code},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "kubernetes-test", "version": "1"}
        }
    }});
    let mut request = codemode_upstream::crypto::http_client()
        .post(node.mcp_url())
        .header("host", host)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "eval")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("reach the node");
    let status = response.status().as_u16();
    (status, response.text().await.expect("read the response"))
}

#[test]
fn the_kubernetes_example_starts_a_node_that_behaves_as_documented() {
    peers::ensure_installed();
    let dir = scratch_dir("durable", "kubernetes");
    let manifests = manifests();

    // The ConfigMap's config, with the cluster's names replaced by this machine's: the Redis
    // Service, the audit volume, and an upstream for the `"...": {}` placeholder.
    let mut config = config_map_json(&manifests);
    let redis_password = "kubernetes-redis-password";
    let mut redis = RedisServer::start_with_password(&dir.join("redis"), redis_password);
    // The password stays a `${REDIS_PASSWORD}` reference, read from the environment.
    assert_eq!(
        config["durable"]["store"],
        "redis://:${REDIS_PASSWORD}@redis:6379/0"
    );
    config["durable"]["store"] = json!(format!(
        "redis://:${{REDIS_PASSWORD}}@127.0.0.1:{}/0",
        redis.port()
    ));
    assert_eq!(config["audit"]["dir"], "/var/log/codemode");
    config["audit"]["dir"] = json!(dir.join("audit"));
    assert_eq!(config["mcpServers"], json!({"...": {}}));
    let files = dir.join("files");
    std::fs::create_dir_all(&files).expect("create the files dir");
    let (command, args) = peers::filesystem_server_cmd(&files);
    config["mcpServers"] = json!({"fs": {"command": command, "args": args}});
    // The admin listener (health and metrics), on a free port instead of 9090.
    assert_eq!(config["server"]["admin"], json!({"listen": "0.0.0.0:9090"}));
    let admin_port = codemode_test_support::services::free_port();
    config["server"]["admin"]["listen"] = json!(format!("0.0.0.0:{admin_port}"));
    assert_eq!(config["logging"], json!({"format": "json"}));
    let config_path = dir.join("codemode.json");
    write_json(&config_path, &config);

    // The Deployment's command line, on a free port instead of 8080, with the config mounted
    // where the document mounts it replaced by the file above.
    let args = container_args(&manifests);
    assert_eq!(
        args,
        [
            "serve",
            "--http",
            "0.0.0.0:8080",
            "--config",
            "/etc/codemode/codemode.json"
        ]
    );
    let args: Vec<&str> = args
        .iter()
        .map(|a| match a.as_str() {
            "0.0.0.0:8080" => "0.0.0.0:0",
            "/etc/codemode/codemode.json" => config_path.to_str().expect("UTF-8 path"),
            other => other,
        })
        .collect();
    // The codemode container's environment from the Secret (then Redis's own).
    let env_names = secret_env_names(&manifests);
    assert_eq!(
        env_names,
        [
            "CODEMODE_STATE_KEY",
            "CODEMODE_TOKEN",
            "CODEMODE_APPROVER_TOKEN",
            "REDIS_PASSWORD",
            "REDIS_PASSWORD"
        ]
    );
    let (token, approver) = ("kubernetes-agents-token", "kubernetes-approvers-token");
    let env = [
        (env_names[0].as_str(), KEY),
        (env_names[1].as_str(), token),
        (env_names[2].as_str(), approver),
        (env_names[3].as_str(), redis_password),
    ];
    let node = Node::start_with_args("node0", &args, &env);

    block_on(async {
        let service = "codemode:8080";
        let (status, body) = post_eval(&node, service, None, "return 1 + 1").await;
        assert_eq!(status, 401, "no bearer token: {body}");

        let (status, body) = post_eval(&node, "elsewhere.example", Some(token), "return 1").await;
        assert_eq!(status, 403, "a host that is not the Service's: {body}");

        for host in [service, "codemode.default.svc.cluster.local:8080"] {
            let (status, body) = post_eval(&node, host, Some(token), "return 6 * 7").await;
            assert_eq!(status, 200, "{host}: {body}");
            assert!(body.contains(r#""result":42"#), "{host}: {body}");
        }

        let list = |token: &'static str| {
            let url = format!("{}/approvals", node.base_url());
            async move {
                let response = codemode_upstream::crypto::http_client()
                    .get(url)
                    .header("host", service)
                    .bearer_auth(token)
                    .send()
                    .await
                    .expect("reach the approval API");
                let status = response.status().as_u16();
                (status, response.json::<Value>().await.expect("a JSON body"))
            }
        };
        assert_eq!(
            list(approver).await,
            (200, json!({"approvals": []})),
            "the approvers see the approval API"
        );
        let (status, body) = list(token).await;
        assert_eq!(status, 403, "the agents may not decide: {body}");
    });

    // The probes and the scrape the Deployment declares, against the node.
    assert_eq!(
        probe_lines(&manifests),
        [
            "prometheus.io/scrape: \"true\"",
            "prometheus.io/port: \"9090\"",
            "prometheus.io/path: /metrics",
            "readinessProbe: { httpGet: { path: /readyz, port: 8080 }, periodSeconds: 5 }",
            "livenessProbe: { httpGet: { path: /healthz, port: 8080 }, periodSeconds: 10, failureThreshold: 3 }",
        ]
    );
    block_on(async {
        let get = |url: String| async move {
            let response = codemode_upstream::crypto::http_client()
                .get(url)
                .header("host", "10.244.1.7:8080")
                .send()
                .await
                .expect("reach the node");
            let status = response.status().as_u16();
            (status, response.text().await.expect("a body"))
        };
        let (status, body) = get(format!("{}/readyz", node.base_url())).await;
        assert_eq!(status, 200, "{body}");
        let ready: Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(ready["status"], "ready", "{body}");
        assert_eq!(
            get(format!("{}/healthz", node.base_url())).await,
            (200, r#"{"status":"ok"}"#.to_string())
        );
        let (status, text) = get(format!("http://127.0.0.1:{admin_port}/metrics")).await;
        assert_eq!(status, 200, "{text}");
        assert!(
            text.contains("\ncodemode_evals_total{profile=\"none\",outcome=\"ok\"} 2\n"),
            "{text}"
        );
    });

    // The store is the Redis the config names: the node keeps its guest there at start.
    let keys = String::from_utf8(redis.cli(&["--scan"])).expect("UTF-8 keys");
    assert!(
        keys.lines().any(|k| k.starts_with("codemode:guest:")),
        "the node keeps its guest in Redis: {keys:?}\n{}",
        node.log()
    );
    node.kill();
    redis.stop();
}
