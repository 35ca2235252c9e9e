//! Result types a model can rely on (clients/observed.py): `get_tools` types a tool without an
//! `outputSchema` by the results scripts under the same profile have received — marked as
//! observed, merged across calls — and a `TypeError` on a tool's result names the expression,
//! the tool and the result's type, declared or observed.

use serde_json::json;

use crate::harness::{Mode, Setup, Transport, base_config};

/// The declaration of method `name`, from its name to the end of its result type.
fn method<'a>(declarations: &'a str, name: &str) -> &'a str {
    let at = declarations
        .find(&format!("{name}(args"))
        .unwrap_or_else(|| panic!("{name} not declared:\n{declarations}"));
    let end = declarations[at..]
        .find(">;\n")
        .map_or(declarations.len(), |e| at + e + 3);
    &declarations[at..end]
}

#[test]
fn results_are_typed_once_observed() {
    let setup = Setup::new("observed_types", Transport::Stdio, base_config);
    // The config a reload installs: the links' descriptions removed, and a profile whose eval
    // tool shows the reload happened.
    let mut v2 = base_config(&setup.scratch);
    v2["outputs"] = json!([
        {"tools": ["everything__get-resource-links"], "redact": ["/*/description"]},
    ]);
    v2["evaluation"]["profiles"]["v2"] = json!({ "allowlist": ["everything__*"] });
    let v2 = setup.config_version("v2.json", &v2);
    let obs = setup.python(
        "observed.py",
        Mode::Auto,
        &[("CODEMODE_CONFIG_V2", v2.as_path())],
    );
    let text = |key: &str| obs[key].as_str().unwrap_or_default().to_string();
    let before = text("before");
    assert!(
        method(&before, "everything__echo").ends_with("): Promise<unknown>;\n"),
        "{before}"
    );
    assert_eq!(obs["ran"], serde_json::json!([false, ["Echo: hi", 3, 2]]));

    let after = text("after");
    assert!(
        after.contains(
            "  // result type observed in 1 call; the server declares none\n  everything__echo(args: {"
        ),
        "{after}"
    );
    assert!(
        method(&after, "everything__echo").ends_with("): Promise<string>;\n"),
        "{after}"
    );
    // Two calls merged: an array of the text and the links.
    assert!(
        after.contains(
            "  // result type observed in 2 calls; the server declares none\n  \"everything__get-resource-links\"(args: {"
        ),
        "{after}"
    );
    assert!(
        method(&after, "\"everything__get-resource-links\"").ends_with(
            "): Promise<(string | {\n    description: string;\n    id: string;\n    \
             mimeType: string;\n    name: string;\n    type: string;\n    uri: string;\n  })[]>;\n"
        ),
        "{after}"
    );
    // A declared type is never replaced by an observed one.
    assert_eq!(
        method(&before, "\"everything__get-structured-content\""),
        method(&after, "\"everything__get-structured-content\"")
    );
    // Observed per profile: scripts under `lenient` have called nothing.
    assert_eq!(text("other_profile").matches("Promise<unknown>").count(), 2);

    // Each failed eval's first line, exactly.
    let links = "`links` is `(string | { description: string; id: string; mimeType: string; \
                 name: string; type: string; uri: string })[]` from everything__get-resource-links";
    for (key, want) in [
        (
            "not_a_function",
            format!(
                "Error (exception) at line 3, column 14: TypeError: `links.first` is not a \
                 function: {links}"
            ),
        ),
        (
            "undefined",
            format!(
                "Error (exception) at line 3, column 20: TypeError: cannot read property 'map' \
                 of undefined (in `links.links.map`; {links})"
            ),
        ),
        (
            "declared",
            "Error (exception) at line 3, column 10: TypeError: `w.split` is not a function: \
             `w` is `{ conditions: string; humidity: number; temperature: number }` from \
             everything__get-structured-content"
                .to_string(),
        ),
    ] {
        assert_eq!(obs[key][0], true, "{key}: an error");
        let text = obs[key][1].as_str().unwrap_or_default();
        assert_eq!(text.lines().next(), Some(want.as_str()), "{key}: {text}");
    }

    // After the reload the links' type is unknown again (it was learned under other rules),
    // then typed without the field the new rule removes.
    let links = "\"everything__get-resource-links\"";
    assert!(
        method(&text("reloaded"), links).ends_with("): Promise<unknown>;\n"),
        "{}",
        text("reloaded")
    );
    assert_eq!(obs["ran_reloaded"], json!([false, 2]));
    let after_reload = text("after_reload");
    assert!(
        after_reload.contains(
            "  // result type observed in 1 call; the server declares none\n  \"everything__get-resource-links\"(args: {"
        ),
        "{after_reload}"
    );
    assert!(
        method(&after_reload, links).ends_with(
            "): Promise<(string | {\n    id: string;\n    mimeType: string;\n    name: string;\n    \
             type: string;\n    uri: string;\n  })[]>;\n"
        ),
        "{after_reload}"
    );
}
