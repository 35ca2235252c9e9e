//! What a release needs besides the code: the license file the manifests declare, no
//! placeholder metadata, and every publishable crate packaging (`cargo package --list`: the
//! files a crate would ship, without a verify build, which would be another cold build).

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace's crates that may be published: every member whose manifest does not say
/// `publish = false`, with the root package; `(name, directory)`.
fn publishable() -> Vec<(String, String)> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("read Cargo.toml");
    let members = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("a members list")
        .0;
    let mut out = vec![("codemode".to_string(), ".".to_string())];
    for dir in members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
    {
        let text = std::fs::read_to_string(root().join(dir).join("Cargo.toml"))
            .unwrap_or_else(|e| panic!("{dir}/Cargo.toml: {e}"));
        if text.contains("\npublish = false") {
            continue;
        }
        let name = text
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|l| l.strip_suffix('"'))
            .unwrap_or_else(|| panic!("{dir}: no name"));
        out.push((name.to_string(), dir.to_string()));
    }
    out
}

#[test]
fn the_license_file_is_the_declared_license() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("read Cargo.toml");
    assert!(
        manifest.contains("\nlicense = \"Apache-2.0\"\n"),
        "the declared license"
    );
    let license = std::fs::read_to_string(root().join("LICENSE")).expect("a LICENSE file");
    let words: Vec<&str> = license.split_whitespace().collect();
    assert_eq!(words[..4], ["Apache", "License", "Version", "2.0,"]);
    assert!(
        license.contains("END OF TERMS AND CONDITIONS"),
        "the whole text"
    );
    for (name, dir) in publishable() {
        let text = std::fs::read_to_string(root().join(&dir).join("Cargo.toml")).expect("read");
        assert!(
            !text.contains("example.invalid"),
            "{name}: placeholder metadata"
        );
        // codemode-abi spells it out: the guest's own workspace builds it without the root
        // manifest (abi/Cargo.toml says why).
        assert!(
            text.contains("license.workspace = true")
                || (dir == "abi" && text.contains("\nlicense = \"Apache-2.0\"\n")),
            "{name}: its license"
        );
    }
}

#[test]
fn every_publishable_crate_packages_with_its_license_and_the_guest_where_needed() {
    let crates = publishable();
    let names: Vec<&str> = crates.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "codemode",
            "codemode-abi",
            "codemode-runtime",
            "codemode-config",
            "codemode-script",
            "codemode-policies",
            "codemode-store",
            "codemode-upstream",
            "codemode-host"
        ]
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    for (name, _) in &crates {
        let out = Command::new(&cargo)
            .current_dir(root())
            .args([
                "package",
                "--list",
                "--allow-dirty",
                "--offline",
                "-p",
                name,
            ])
            .output()
            .expect("run cargo package");
        let files = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "cargo package --list -p {name}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let files: Vec<&str> = files.lines().collect();
        for wanted in ["Cargo.toml", "LICENSE", "src/lib.rs"] {
            assert!(files.contains(&wanted), "{name} lacks {wanted}: {files:?}");
        }
        if name == "codemode-runtime" {
            assert!(files.contains(&"codemode_guest.wasm"), "{files:?}");
        }
    }
}
