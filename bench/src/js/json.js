// JSON.parse and JSON.stringify of a document of about 1 MB, five times each.
function makeDocument() {
  const items = [];
  for (let i = 0; i < 6000; i++) {
    items.push({
      id: i,
      name: "item-" + i,
      tags: ["t" + (i % 7), "g" + (i % 13)],
      price: i * 1.25,
      active: i % 3 === 0,
      owner: { id: i % 97, email: "user" + (i % 97) + "@example.com" },
      history: [i, i + 1, i + 2, i * 2],
      note: "n".repeat(i % 24),
    });
  }
  return { version: 3, generated: "2026-11-22T00:00:00Z", items };
}

const text = JSON.stringify(makeDocument());
let total = 0;
for (let round = 0; round < 5; round++) {
  const doc = JSON.parse(text);
  total += doc.items.length;
  total += JSON.stringify(doc).length;
}
[text.length, total]
