//! `/metrics` scraped by a real Prometheus (Debian's `prometheus`, started by the test) while a
//! short load runs: once a scrape that started after the load is in, Prometheus's HTTP API
//! gives the eval, tool-call and approval counters the load made, exactly (one eval's two
//! identical asked calls share one question: `codemode_approvals_joined_total` counts the
//! call that joined). The endpoint demands the
//! `server.admin.metricsAuth` token (Prometheus sends it), and names no argument value.

use std::time::{SystemTime, UNIX_EPOCH};

use codemode_test_support::scratch_dir;
use codemode_test_support::services::Prometheus;
use serde_json::{Value, json};

use crate::client::{approve_all, block_on, call_tool, get, input_keys, request_state};
use crate::harness::{KEY, KEY_ENV, Node, await_some, write_json};

/// The bearer token `/metrics` demands.
const TOKEN: &str = "metrics-test-token";
/// An argument value that must never reach a metric.
const SECRET_ARG: &str = "s3cr3t-argument-value";

/// The metrics this load gives a series, as their `# TYPE` line's name. A labelled family is
/// written from its first series on (prometheus-client leaves an empty one out): this load runs
/// no upstream server and refuses no client, so `codemode_upstream_up`,
/// `codemode_upstream_restarts` and `codemode_refusals` are not here.
const METRICS: [&str; 9] = [
    "codemode_evals",
    "codemode_eval_duration_seconds",
    "codemode_tool_calls",
    "codemode_approvals",
    "codemode_approvals_joined",
    "codemode_approvals_pending",
    "codemode_parked_evals",
    "codemode_http_responses",
    "codemode_pool_slots_in_use",
];

/// Prometheus's answer to the instant query `query`: its `data.result`.
fn query(prometheus: &Prometheus, query: &str) -> Vec<Value> {
    let url = format!(
        "{}/api/v1/query?query={}",
        prometheus.url(),
        percent_encode(query)
    );
    let (status, body) = block_on(get(&url, None, None)).expect("query prometheus");
    assert_eq!(status, 200, "{query}: {body}");
    let body: Value = serde_json::from_str(&body).expect("prometheus answers JSON");
    body["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `{labels → value}` of an instant vector, each series named by its labels `keys`.
fn series(result: &[Value], keys: &[&str]) -> Vec<(Vec<String>, f64)> {
    let mut out: Vec<(Vec<String>, f64)> = result
        .iter()
        .map(|s| {
            let labels = keys
                .iter()
                .map(|k| s["metric"][*k].as_str().unwrap_or_default().to_string())
                .collect();
            let value = s["value"][1]
                .as_str()
                .and_then(|v| v.parse().ok())
                .unwrap_or(f64::NAN);
            (labels, value)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

/// Waits for a successful scrape that started after `after` (Unix seconds).
fn await_scrape_after(prometheus: &Prometheus, after: f64) {
    await_some("a scrape after the load", || {
        let up = query(prometheus, "up{job=\"codemode\"}");
        let [sample] = up.as_slice() else { return None };
        let at = sample["value"][0].as_f64()?;
        let scraped = query(prometheus, "timestamp(up{job=\"codemode\"})");
        let started = scraped.first()?["value"][1].as_str()?.parse::<f64>().ok()?;
        (sample["value"][1] == "1" && started > after && at >= started).then_some(())
    });
}

#[test]
fn prometheus_scrapes_the_counters_the_load_made() {
    let dir = scratch_dir("durable", "metrics");
    let config = dir.join("codemode.json");
    write_json(
        &config,
        &json!({
            "commands": {
                "today": {"command": "date", "args": ["-u", "+%F"]},
                "wipe": {"command": "true"},
                "stamp": {"command": "true"}
            },
            "evaluation": {"profiles": {
                "metered": {"denylist": ["wipe"]},
                "asked": {"asklist": ["stamp"], "approvalTimeoutSeconds": 600}
            }},
            "server": {"admin": {"metricsAuth": {"env": "METRICS_TEST_TOKEN"}}},
            // Answered in memory: a saved eval would ask its joined call again on resume.
            "durable": {
                "dir": dir.join("state"),
                "keyEnv": KEY_ENV,
                "suspendToStoreAfterSeconds": 3600
            }
        }),
    );
    let node = Node::start(
        "metrics",
        &config,
        &[(KEY_ENV, KEY), ("METRICS_TEST_TOKEN", TOKEN)],
    );
    let metrics_url = format!("{}/metrics", node.base_url());
    let (status, _) = block_on(get(&metrics_url, None, None)).expect("GET /metrics");
    assert_eq!(status, 401, "/metrics without the token");

    let prometheus = Prometheus::start(
        &dir.join("prometheus"),
        &format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: codemode\n    authorization:\n      credentials: {TOKEN}\n\
             \x20   static_configs:\n      - targets: [\"{}\"]\n",
            node.addr
        ),
    );
    await_scrape_after(&prometheus, 0.0);
    assert!(query(&prometheus, "codemode_evals_total").is_empty());

    // The load: 4 clients at once; 12 evals calling `today` twice, 4 whose call of `wipe` is
    // denied (and caught), 3 calling a tool nobody has (uncaught: the eval fails).
    let url = node.mcp_url();
    let wipe = format!(
        "try {{ await codemode.wipe({{note: \"{SECRET_ARG}\"}}); }} catch (e) {{}} return 2"
    );
    // (script, runs by client i)
    let scripts: [(&str, [usize; 4]); 3] = [
        (
            "await codemode.today({}); await codemode.today({}); return 1",
            [3, 3, 3, 3],
        ),
        (&wipe, [1, 1, 1, 1]),
        ("return await codemode.no_such_tool({})", [1, 1, 1, 0]),
    ];
    std::thread::scope(|scope| {
        for client in 0..4 {
            let (url, scripts) = (&url, &scripts);
            scope.spawn(move || {
                for (script, runs) in scripts {
                    for _ in 0..runs[client] {
                        let args = json!({"code": script});
                        block_on(call_tool(url, "codemode_eval_metered", &args, None))
                            .expect("an eval");
                    }
                }
            });
        }
    });
    // One eval of the `asked` profile: its two identical calls of `stamp` put one question,
    // approved once for both.
    let twin =
        json!({"code": "await Promise.all([codemode.stamp({}), codemode.stamp({})]); return 3"});
    let asked = block_on(call_tool(&url, "codemode_eval_asked", &twin, None))
        .expect("an eval")
        .result;
    assert_eq!(input_keys(&asked).len(), 1, "{asked}");
    let retry = Some((request_state(&asked), approve_all(&asked)));
    let retry = retry.as_ref().map(|(s, a)| (s.as_str(), a.clone()));
    let done = block_on(call_tool(&url, "codemode_eval_asked", &twin, retry))
        .expect("the answered eval")
        .result;
    assert_eq!(done["structuredContent"]["result"], 3, "{done}");
    let ended = now_seconds();
    await_scrape_after(&prometheus, ended);

    let evals = query(
        &prometheus,
        "sum by (profile, outcome) (codemode_evals_total)",
    );
    let evals = series(&evals, &["profile", "outcome"]);
    let total: f64 = evals.iter().map(|(_, v)| v).sum();
    assert_eq!(total, 20.0, "{evals:?}");
    let ok: Vec<_> = evals
        .iter()
        .filter(|(l, _)| l[1] == "ok")
        .cloned()
        .collect();
    assert_eq!(
        ok,
        vec![
            (vec!["asked".to_string(), "ok".to_string()], 1.0),
            (vec!["metered".to_string(), "ok".to_string()], 16.0)
        ],
        "{evals:?}"
    );
    assert!(
        evals.iter().all(|(l, _)| l[0] == "metered" || l[1] == "ok"),
        "{evals:?}"
    );

    let calls = query(&prometheus, "codemode_tool_calls_total");
    assert_eq!(
        series(&calls, &["tool", "decision"]),
        vec![
            (vec!["other".to_string(), "denied".to_string()], 3.0),
            (vec!["stamp".to_string(), "approved".to_string()], 2.0),
            (vec!["today".to_string(), "allowed".to_string()], 24.0),
            (vec!["wipe".to_string(), "denied".to_string()], 4.0),
        ]
    );
    let duration = query(&prometheus, "codemode_eval_duration_seconds_count");
    assert_eq!(series(&duration, &[]), vec![(vec![], 20.0)]);
    // Both calls approved through the client's answer; the second by joining the first's ask.
    let approvals = query(&prometheus, "codemode_approvals_total");
    assert_eq!(
        series(&approvals, &["channel", "decision"]),
        vec![(vec!["elicitation".to_string(), "approved".to_string()], 2.0)]
    );
    let joined = query(&prometheus, "codemode_approvals_joined_total");
    assert_eq!(series(&joined, &[]), vec![(vec![], 1.0)]);

    let (status, text) = block_on(get(&metrics_url, None, Some(TOKEN))).expect("GET /metrics");
    assert_eq!(status, 200);
    for name in METRICS {
        assert!(
            text.contains(&format!("\n# TYPE {name} ")),
            "no {name}:\n{text}"
        );
    }
    assert!(
        !text.contains(SECRET_ARG) && !text.contains("no_such_tool"),
        "{text}"
    );
}
