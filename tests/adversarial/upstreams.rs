//! Misbehaving upstreams: huge, deep, invalid, hostile, hanging and dying servers. A call to
//! one fails or succeeds as a classified outcome; nothing it sends is rendered raw; the other
//! upstream keeps working.

use std::time::Duration;

use codemode_runtime::ErrorKind::*;
use codemode_runtime::EvalOptions;
use serde_json::json;

use crate::harness::{Case, Expect::*, Fixture, Probe, case, run_table_with};

fn short() -> EvalOptions {
    let mut o = Fixture::options();
    o.timeout(Some(Duration::from_millis(1500)));
    o
}

fn text_clean(p: &Probe<'_>) -> Result<(), String> {
    if let Some(c) = p
        .text
        .chars()
        .find(|&c| c != '\n' && codemode_policies::is_invisible(c))
    {
        return Err(format!("raw {c:?} in the text block: {:?}", p.text));
    }
    if p.text
        .lines()
        .filter(|l| l.starts_with("Tool calls"))
        .count()
        > 1
    {
        return Err(format!("a forged Tool calls section: {:?}", p.text));
    }
    Ok(())
}

fn cases() -> Vec<Case> {
    vec![
        case("a normal call works", "return await codemode.nasty__ok()", Contained),
        case("a 40 MB result", "const r = await codemode.nasty__huge().catch(e => e.name); return typeof r", Contained),
        case("200,000 items", "const r = await codemode.nasty__many_items().catch(e => e.name); return typeof r", Contained),
        case("structured content 5,000 deep", "const r = await codemode.nasty__deep().catch(e => e.name); return typeof r", Contained),
        case("a result full of escapes", "return await codemode.nasty__escapes()", AnyResult).checked(text_clean),
        case("an error full of escapes", "return await codemode.nasty__fails()", Kind(Exception)).checked(text_clean),
        case("a line that is not JSON", "const a = await codemode.nasty__garbage().catch(e => e.name); const b = await codemode.nasty__ok().catch(e => e.name); return [typeof a, typeof b]", Contained),
        case("a call that never answers times out", "return await codemode.nasty__hang()", Kind(Timeout)).with_options(short()),
        case("a hanging call does not block another upstream", "const r = await Promise.race([codemode.nasty__hang(), codemode.fs__list_allowed_directories({})]); return typeof r", Contained).with_options(short()),
        case("many hanging calls at once", "await Promise.all(Array.from({length: 32}, () => codemode.nasty__hang()))", Kind(Timeout)).with_options(short()),
        case("the server dies mid-call", "try { await codemode.nasty__die(); return 'answered'; } catch (e) { return e.name }", Returns(json!("ToolError"))),
        case("calls after the server died fail cleanly", "try { await codemode.nasty__ok(); return 'answered'; } catch (e) { return e.name }", Contained),
        case("the other upstream still works", "const r = await codemode.fs__list_allowed_directories({}); return typeof r", Returns(json!("object"))),
    ]
}

#[test]
fn misbehaving_upstreams() {
    run_table_with("upstreams", true, cases());
}
