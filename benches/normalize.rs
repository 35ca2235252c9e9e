//! The cost of reading code as models write it ([`codemode_script::normalize`]) on a typical
//! 20-line script, paid once per eval before the sandbox starts: plain JavaScript (passed on
//! unchanged) and the same script as fenced TypeScript (types blanked in place). The thread
//! the parse runs on (a large stack, for deeply nested code) is part of the figure, and is most
//! of it: compare `eval_prework_*`, what an eval pays before and after code forms.

use std::hint::black_box;
use std::time::Duration;

use codemode_script::{extract_tool_calls, normalize, normalize_with_preview};
use criterion::{Criterion, criterion_group, criterion_main};

const JS: &str = r#"const found = await codemode.search_tools({ query: "issues" });
const names = found.results.map((r) => r.name);
const open = await codemode.github__list_issues({ owner: "acme", repo: "api", state: "open" });
const byLabel = {};
for (const issue of open) {
  for (const label of issue.labels) {
    byLabel[label.name] = (byLabel[label.name] ?? 0) + 1;
  }
}
const top = Object.entries(byLabel)
  .sort((a, b) => b[1] - a[1])
  .slice(0, 5);
const details = await Promise.all(
  top.map(([name]) => codemode.github__get_label({ owner: "acme", repo: "api", name })),
);
console.log(`found ${open.length} open issues`);
if (top.length === 0) {
  return { names, top: [] };
}
return { names, top, details };
"#;

const TS: &str = r#"```ts
interface Issue { labels: { name: string }[] }
const found = await codemode.search_tools({ query: "issues" }) as { results: { name: string }[] };
const names: string[] = found.results.map((r) => r.name);
const open = await codemode.github__list_issues<Issue[]>({ owner: "acme", repo: "api", state: "open" });
const byLabel: Record<string, number> = {};
for (const issue of open) {
  for (const label of issue.labels) {
    byLabel[label.name] = (byLabel[label.name] ?? 0) + 1;
  }
}
const top = Object.entries(byLabel)
  .sort((a: [string, number], b: [string, number]) => b[1] - a[1])
  .slice(0, 5);
const details = await Promise.all(
  top.map(([name]) => codemode.github__get_label({ owner: "acme", repo: "api", name })),
);
console.log(`found ${open!.length} open issues`);
export default async (): Promise<object> => ({ names, top, details });
```"#;

fn normalize_bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("normalize");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(3));
    assert!(matches!(normalize(JS), Ok(std::borrow::Cow::Borrowed(_))));
    assert!(matches!(normalize(TS), Ok(std::borrow::Cow::Owned(_))));
    group.bench_function("plain_js_20_lines", |b| {
        b.iter(|| normalize(black_box(JS)).map(|c| c.len()))
    });
    group.bench_function("fenced_ts_20_lines", |b| {
        b.iter(|| normalize(black_box(TS)).map(|c| c.len()))
    });
    // What an eval pays before the sandbox starts: before code forms, the preview alone; now
    // the normalisation and the preview on one parsing thread.
    group.bench_function("eval_prework_before_extract_tool_calls", |b| {
        b.iter(|| extract_tool_calls(black_box(JS)).calls.len())
    });
    group.bench_function("eval_prework_normalize_with_preview", |b| {
        b.iter(|| normalize_with_preview(black_box(JS)).map(|(_, p)| p.calls.len()))
    });
    group.finish();
}

criterion_group!(benches, normalize_bench);
criterion_main!(benches);
