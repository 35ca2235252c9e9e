// A sample script: `cargo run --release -- run examples/hello.js`
const squares = [1, 2, 3, 4].map((n) => n * n);
console.log("squares:", squares);
return { sum: squares.reduce((a, b) => a + b, 0), when: "now" };
