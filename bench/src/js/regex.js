// Regular expressions: global matching, capture groups, replace with a callback, test.
function run() {
  const lines = [];
  for (let i = 0; i < 12000; i++) {
    lines.push(`user${i}@example${i % 50}.com visited /path/${i}/index.html at 2026-${(i % 12) + 1}-${(i % 28) + 1} status=${200 + (i % 5)}`);
  }
  const text = lines.join("\n");
  const emails = text.match(/[a-z0-9]+@[a-z0-9]+\.com/g).length;
  let days = 0;
  for (const m of text.matchAll(/(\d{4})-(\d{1,2})-(\d{1,2})/g)) days += Number(m[3]);
  const rewritten = text.replace(/\/path\/(\d+)\//g, (_m, n) => `/p/${n * 2}/`).length;
  let matched = 0;
  for (const line of lines) if (/example(1|2)\d\.com.*status=20[34]/.test(line)) matched++;
  const words = text.split(/\s+/).length;
  return [emails, days, rewritten, matched, words];
}
run()
