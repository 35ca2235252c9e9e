//! The release profile's per-crate optimisation (`[profile.release.package.*]` in Cargo.toml).
//!
//! Below opt-level 2, rustc shares a crate's instances of generic code (`Range::next`,
//! `Vec::push`, …) with the crates that depend on it and are below 2 as well (its
//! `share_generics` is on for opt-levels 0, 1, `s` and `z`). So a crate at opt-level 1 that
//! depends, directly or not, on a crate at 0 may run that crate's unoptimised instances: with
//! Pulley's interpreter at 0, cranelift (at 1) did, and a first run took 2.2 s instead of 1.85 s
//! (docs/PERFORMANCE.md, "Build cost"). This check keeps every crate below an opt-level 1 crate
//! off 0.
//!
//! Generic functions marked `#[inline(never)]` are shared at every opt-level
//! (rust-lang/rust#123244), so a crate at 3 can take one from a crate at 0 below it as well. That
//! is not checked here: it needs the release build's objects, and docs/PERFORMANCE.md shows what
//! it comes to (three cold `Arc::drop_slow` instances).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Crate name → its `opt-level` in the release profile, for the crates the profile names.
type Levels = BTreeMap<String, String>;

/// Crate name → the names of the crates it depends on, through normal dependencies on this
/// machine's target. Build scripts are compiled with the build-override profile; proc macros are
/// followed too, which can only find more. Versions of one crate are merged, as the profile names
/// crates without versions.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// `[profile.release.package.NAME]` sections and their `opt-level`, from the manifest's text.
fn release_levels(manifest: &str) -> Levels {
    let mut levels = Levels::new();
    let mut section: Option<String> = None;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line
                .strip_prefix("[profile.release.package.")
                .and_then(|rest| rest.strip_suffix(']'))
                .map(|name| name.trim_matches('"').to_string());
        } else if let (Some(name), Some(level)) = (&section, line.strip_prefix("opt-level = ")) {
            levels.insert(name.clone(), level.trim_matches('"').to_string());
        }
    }
    levels
}

/// The target this machine builds for, from `rustc -vV`.
fn host_target() -> String {
    let output = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc runs");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string()
}

/// The resolved dependency graph, from `cargo metadata`. Only this target's dependencies: a build
/// downloads no others, and `--offline` fails on any it lacks.
fn dependency_graph(root: &Path) -> Graph {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
        ])
        .arg(host_target())
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: BTreeMap<&str, &str> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let mut graph = Graph::new();
    for node in metadata["resolve"]["nodes"].as_array().unwrap() {
        let deps = graph
            .entry(names[node["id"].as_str().unwrap()].to_string())
            .or_default();
        for dep in node["deps"].as_array().unwrap() {
            let normal = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|kind| kind["kind"].is_null());
            if normal {
                deps.insert(names[dep["pkg"].as_str().unwrap()].to_string());
            }
        }
    }
    graph
}

/// Every `(crate, crate at opt-level 0 below it)` where the first is at 1, `s` or `z`.
fn shared_unoptimised(levels: &Levels, graph: &Graph) -> Vec<(String, String)> {
    let shares = |name: &str| matches!(levels.get(name).map(String::as_str), Some("1" | "s" | "z"));
    let mut found = Vec::new();
    for name in graph.keys().filter(|name| shares(name)) {
        let mut seen = BTreeSet::new();
        let mut stack = vec![name.as_str()];
        while let Some(current) = stack.pop() {
            for dep in graph.get(current).into_iter().flatten() {
                if seen.insert(dep.as_str()) {
                    stack.push(dep);
                    if levels.get(dep).map(String::as_str) == Some("0") {
                        found.push((name.clone(), dep.clone()));
                    }
                }
            }
        }
    }
    found
}

#[test]
fn no_crate_at_opt_level_1_runs_unoptimised_generic_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let levels = release_levels(&manifest);
    let graph = dependency_graph(root);
    // The profile was read: a level for each section, the guest's compiler at 1, the agent eval
    // at 0.
    assert_eq!(
        levels.len(),
        manifest.matches("\n[profile.release.package.").count()
    );
    assert_eq!(
        levels.get("cranelift-codegen").map(String::as_str),
        Some("1")
    );
    assert_eq!(
        levels.get("codemode-agent-eval").map(String::as_str),
        Some("0")
    );
    assert_eq!(
        shared_unoptimised(&levels, &graph),
        Vec::new(),
        "(a crate at opt-level 1, a crate at 0 it depends on): put the second at 1 or the first at 3"
    );

    // The check finds what it looks for: the config's reader back at 0 would put its instances
    // under codemode-upstream (at 1), and so would Pulley's interpreter under cranelift.
    let mut broken = levels.clone();
    broken.insert("codemode-config".into(), "0".into());
    broken.insert("pulley-interpreter".into(), "0".into());
    let found = shared_unoptimised(&broken, &graph);
    for pair in [
        ("codemode-upstream", "codemode-config"),
        ("cranelift-codegen", "pulley-interpreter"),
    ] {
        assert!(
            found.contains(&(pair.0.to_string(), pair.1.to_string())),
            "{pair:?} not found in {found:?}"
        );
    }
}
