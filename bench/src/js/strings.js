// String building: concatenation, template literals, join, split, case mapping, slicing.
function build() {
  let csv = "";
  for (let i = 0; i < 60000; i++) csv += i.toString(36) + (i % 10 === 9 ? "\n" : ",");
  const rows = [];
  for (let i = 0; i < 60000; i++) rows.push(`row ${i}: ${"x".repeat(i % 12)} [${i % 7}]`);
  const joined = rows.join("\n");
  const lines = joined.split("\n");
  let checksum = 0;
  for (const line of lines) checksum += line.length + line.indexOf("x");
  const shouted = joined.toUpperCase();
  let padded = 0;
  for (let i = 0; i < 20000; i++) padded += String(i).padStart(8, "0").slice(2).length;
  return [csv.length, joined.length, lines.length, checksum, shouted.length, padded];
}
build()
