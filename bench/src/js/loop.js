// A plain counting loop (the figure in notes/perf-facts.md): interpreter dispatch and numbers.
let s = 0;
for (let i = 0; i < 1e6; i++) s += i;
s
