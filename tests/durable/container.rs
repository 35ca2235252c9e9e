//! The container recipe (deploy/Containerfile), checked by its content: no base image can be
//! pulled on the machines the tests run on, so the image is not built here. What can run does:
//! its `HEALTHCHECK` command, taken from the recipe, against a real `codemode serve --http`.

use std::path::Path;
use std::process::Command;

use codemode_test_support::scratch_dir;
use codemode_test_support::services::free_port;
use serde_json::{Value, json};

use crate::harness::{KEY, KEY_ENV, Node, write_json};

/// The recipe's instructions, continuation lines joined and comments left out: `(KEYWORD,
/// arguments)`.
fn instructions() -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/Containerfile");
    let text = std::fs::read_to_string(&path).expect("read deploy/Containerfile");
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(part) => current.push_str(part),
            None => {
                current.push_str(line);
                let (keyword, rest) = current.split_once(' ').unwrap_or((&current, ""));
                out.push((keyword.to_string(), rest.trim().to_string()));
                current.clear();
            }
        }
    }
    out
}

fn all_of<'a>(instructions: &'a [(String, String)], keyword: &str) -> Vec<&'a str> {
    instructions
        .iter()
        .filter(|(k, _)| k == keyword)
        .map(|(_, a)| a.as_str())
        .collect()
}

#[test]
fn the_container_recipe_copies_the_release_binary_into_a_slim_non_root_image() {
    let recipe = instructions();
    let from = all_of(&recipe, "FROM");
    assert_eq!(from, ["debian:12-slim"], "one stage, a slim base");
    let runs = all_of(&recipe, "RUN").join(" ");
    assert!(
        runs.contains("apt-get install -y --no-install-recommends ca-certificates")
            && runs.contains("rm -rf /var/lib/apt/lists/*"),
        "{runs}"
    );
    assert!(runs.contains("useradd --system --uid 10001"), "{runs}");
    assert_eq!(all_of(&recipe, "USER"), ["10001:10001"], "not root");
    assert_eq!(
        all_of(&recipe, "COPY"),
        [
            "target/release/codemode /usr/local/bin/codemode",
            "LICENSE /usr/share/doc/codemode/LICENSE"
        ]
    );
    assert_eq!(all_of(&recipe, "ENTRYPOINT"), ["[\"codemode\"]"]);
    let cmd: Value = serde_json::from_str(all_of(&recipe, "CMD")[0]).expect("CMD in exec form");
    assert_eq!(
        cmd,
        json!([
            "serve",
            "--http",
            "0.0.0.0:8080",
            "--config",
            "/etc/codemode/codemode.json"
        ])
    );
    assert_eq!(all_of(&recipe, "EXPOSE"), ["8080"]);
}

/// The `HEALTHCHECK`'s command, as the container runtime would run it (exec form).
fn healthcheck() -> Vec<String> {
    let recipe = instructions();
    let [check] = all_of(&recipe, "HEALTHCHECK")[..] else {
        panic!("one HEALTHCHECK")
    };
    let exec = check.split_once("CMD ").expect("HEALTHCHECK … CMD").1;
    serde_json::from_str(exec).expect("the check's command in exec form")
}

#[test]
fn the_healthcheck_passes_against_a_serving_node_and_fails_without_one() {
    let argv = healthcheck();
    assert!(argv.iter().any(|a| a.contains("GET /healthz ")), "{argv:?}");
    let dir = scratch_dir("durable", "container");
    let config = dir.join("codemode.json");
    write_json(
        &config,
        &json!({"durable": {"dir": dir.join("state"), "keyEnv": KEY_ENV}}),
    );
    let node = Node::start("container", &config, &[(KEY_ENV, KEY)]);
    let run = |port: u16| {
        Command::new(&argv[0])
            .args(&argv[1..])
            .env("CODEMODE_HEALTH_PORT", port.to_string())
            .status()
            .expect("run the healthcheck")
    };
    assert!(
        run(node.port()).success(),
        "the check fails against a serving node"
    );
    assert!(
        !run(free_port()).success(),
        "the check passes with nothing listening"
    );
    drop(node);
}
