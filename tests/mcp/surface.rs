//! What a model is shown before it writes a line (clients/surface.py): `tools/list` of the
//! embedded default config (its filesystem server being the pinned peer, the same package and
//! version), as the Python SDK receives it, in bytes of compact JSON — the whole `tools` array
//! and each tool — printed, and bounded: 3,000 bytes in all, and at most 400 more per further
//! profile. One eval tool per profile: the default profile's is `eval`, listed once.

use serde_json::{Value, json};

use crate::harness::{Mode, Setup, Transport};
use crate::peers;

/// The most bytes `tools/list`'s `tools` array of the default config may take.
const SURFACE_BUDGET: usize = 3_000;
/// The most bytes one more profile may add.
const PROFILE_BUDGET: usize = 400;

/// The embedded default config, its filesystem server being the pinned test peer over the
/// scratch files, with `extra` profiles added.
fn default_config(files: &std::path::Path, extra: &Value) -> Value {
    let mut config: Value =
        serde_json::from_str(include_str!("../../host/src/default-config.json")).unwrap();
    let (command, args) = peers::filesystem_server_cmd(files);
    config["mcpServers"]["filesystem"] = json!({"command": command, "args": args});
    for (name, profile) in extra.as_object().into_iter().flatten() {
        config["evaluation"]["profiles"][name] = profile.clone();
    }
    config
}

fn listing(name: &str, extra: Value) -> Value {
    let setup = Setup::new(name, Transport::Stdio, |scratch| {
        default_config(&scratch.path("files"), &extra)
    });
    setup.python("surface.py", Mode::Auto, &[])
}

fn bytes(obs: &Value) -> usize {
    obs["bytes"].as_u64().unwrap() as usize
}

#[expect(clippy::print_stdout, reason = "the test reports what it measured")]
#[test]
fn the_default_configs_tool_list_is_lean() {
    let obs = listing("surface_default", json!({}));
    println!(
        "tools/list of the default config: {} bytes {}",
        bytes(&obs),
        obs["tool_bytes"]
    );
    assert_eq!(
        obs["names"],
        json!([
            "eval",
            "codemode_eval_readonly",
            "search_tools",
            "get_tools"
        ])
    );
    assert!(
        bytes(&obs) <= SURFACE_BUDGET,
        "{} bytes: {:#}",
        bytes(&obs),
        obs["tools"]
    );
    let tools = obs["tools"].as_array().unwrap();
    let eval = &tools[0];
    let description = eval["description"].as_str().unwrap();
    // How tool results arrive, told once.
    assert!(
        description.contains(
            "A call resolves to the tool's structured content, else its text parsed as JSON, \
             else the text."
        ),
        "{description}"
    );
    assert!(
        description.ends_with(
            "Servers: filesystem (14 tools). Runs under profile `supervised` (reads freely, asks \
             you before it writes, edits or moves a file). Allows: everything else. Asks a human \
             first: filesystem__write_file, filesystem__edit_file, filesystem__move_file, \
             filesystem__create_directory (denied when nobody can answer)."
        ),
        "{description}"
    );
    // The other profile's tool says only what differs.
    assert_eq!(
        tools[1]["description"],
        "`eval` under profile `readonly` (reads files and directories, changes \
         nothing). Allows only: filesystem__read_*, filesystem__list_*, filesystem__search_files, \
         filesystem__get_file_info, filesystem__directory_tree, search_tools, get_tools, \
         hitl_request."
    );
    for tool in &tools[..2] {
        assert_eq!(tool.get("outputSchema"), None, "{tool}");
        assert_eq!(tool["inputSchema"]["required"], json!(["code"]));
    }
    assert!(
        obs["tool_bytes"]["codemode_eval_readonly"]
            .as_u64()
            .unwrap() as usize
            <= PROFILE_BUDGET,
        "{}",
        obs["tool_bytes"]
    );

    // A third profile adds one tool of at most 400 bytes.
    let more = listing(
        "surface_more",
        json!({"writer": {"description": "writes files without asking",
                          "denylist": ["filesystem__move_file"]}}),
    );
    println!(
        "with a third profile: {} bytes (+{})",
        bytes(&more),
        bytes(&more) - bytes(&obs)
    );
    assert_eq!(
        more["names"],
        json!([
            "eval",
            "codemode_eval_readonly",
            "codemode_eval_writer",
            "search_tools",
            "get_tools"
        ])
    );
    assert!(
        bytes(&more) - bytes(&obs) <= PROFILE_BUDGET,
        "{} bytes more",
        bytes(&more) - bytes(&obs)
    );
}

/// The commonest slips, as a model reads them through a client that cannot elicit (the
/// default config): each error names the fix, in at most 400 bytes of text.
#[expect(clippy::print_stdout, reason = "the test reports what it measured")]
#[test]
fn errors_name_the_fix() {
    let setup = Setup::new("surface_errors", Transport::Stdio, |scratch| {
        default_config(&scratch.path("files"), &json!({}))
    });
    let obs = setup.python(
        "surface.py",
        Mode::Auto,
        &[("SURFACE_ERRORS", std::path::Path::new("1"))],
    );
    let errors = &obs["errors"];
    println!("{errors:#}");
    let text = |key: &str| errors[key]["text"].as_str().unwrap_or_default().to_string();
    for key in ["wrong_key", "readonly_write", "nobody_to_ask"] {
        let text = text(key);
        println!("{key}: {} bytes of text", text.len());
        assert!(text.len() <= 400, "{key}: {} bytes: {text}", text.len());
    }
    let has = |key: &str, want: &str| {
        let text = text(key);
        assert!(text.contains(want), "{key}: {text}");
    };
    has(
        "wrong_key",
        "invalid_arguments: `filesystem__read_text_file` was not called: unknown key `filePath`; \
         expected `path` (optional: `head`, `tail`)",
    );
    // Said once: the ledger line points to the error instead of repeating it.
    has(
        "wrong_key",
        "#1 filesystem__read_text_file error — the error above",
    );
    has(
        "readonly_write",
        "profile `readonly` does not allow `filesystem__write_file`; `eval` can, after approval",
    );
    has(
        "nobody_to_ask",
        "`filesystem__write_file` needs approval and this client cannot be asked: ask the user to \
         run it, or use a client with elicitation",
    );
    let get = errors["get_unknown"].as_str().unwrap_or_default();
    assert!(
        get.ends_with(
            "// unknown tool `filesystem__read_txt_file`; did you mean `filesystem__read_text_file`, \
             `filesystem__read_file`, `filesystem__edit_file`?"
        ),
        "{get}"
    );
    let profile = errors["unknown_profile"].as_str().unwrap_or_default();
    assert!(
        profile.contains("unknown profile `nope`; profiles you may use: `supervised`, `readonly`"),
        "{profile}"
    );
    // Codemode's own text keeps no escaped line breaks.
    for key in ["wrong_key", "readonly_write", "nobody_to_ask"] {
        assert!(!text(key).contains("\\n"), "{key}: {}", text(key));
    }
}
