use serde_json::{Value, json};

use super::*;

#[test]
fn values_that_fit_are_compact_and_whole() {
    let v = json!({"b": [1, 2.5, null, true], "a": "x\u{1b}[2K\u{202e}"});
    assert_eq!(
        fit(&v, 1000),
        (
            r#"{"a":"x\u001b[2K\u202e","b":[1,2.5,null,true]}"#.to_string(),
            false
        )
    );
    // The bidi override is a visible escape, and still JSON for the same text.
    let (text, _) = fit(&v, 1000);
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
}

#[test]
fn large_values_keep_their_shape_with_markers() {
    let table: Vec<Value> = (0..50)
        .map(|i| json!({"id": i, "name": format!("row {i}"), "body": "lorem ipsum ".repeat(10)}))
        .collect();
    let cells = r#"{"body":"lorem ipsum lorem ipsum lor… 80 more characters … lorem ipsum ","#;
    let cases: Vec<(Value, usize, String)> = vec![
        (
            json!((0..200).collect::<Vec<_>>()),
            64,
            r#"[0,1,2,3,4,5,6,7,8,9,"… 186 more items …",196,197,198,199]"#.into(),
        ),
        (
            json!("x".repeat(1000)),
            100,
            format!(
                "\"{}… 936 more characters …{}\"",
                "x".repeat(43),
                "x".repeat(21)
            ),
        ),
        (
            json!({"rows": table}),
            600,
            format!(
                r#"{{"rows":[{}"id":0,"name":"row 0"}},{}"id":1,"name":"row 1"}},{}"id":2,"name":"row 2"}},{}"id":3,"name":"row 3"}},"… 45 more items …",{}"id":49,"name":"row 49"}}]}}"#,
                cells, cells, cells, cells, cells
            ),
        ),
        (
            json!([[[["deep".repeat(100)]]]]),
            64,
            format!(
                "[[[[\"{}… 376 more characters …{}\"]]]]",
                "deep".repeat(4),
                "deep".repeat(2)
            ),
        ),
        (
            Value::Object((0..100).map(|i| (format!("k{i:02}"), json!(i))).collect()),
            80,
            // A `serde_json::Map` keeps its keys sorted: the marker key sorts last.
            r#"{"k00":0,"k01":1,"k02":2,"k03":3,"k98":98,"k99":99,"…":"… 94 more keys …"}"#.into(),
        ),
        // A key named like the marker does not collide with it.
        (
            Value::Object(
                (0..100)
                    .map(|i| (format!("…{i:02}"), json!(i)))
                    .chain([("…".to_string(), json!(0))])
                    .collect(),
            ),
            64,
            r#"{"…":0,"…00":0,"…99":99,"……":"… 98 more keys …"}"#.into(),
        ),
        (
            json!([1, "x".repeat(100)]),
            64,
            format!(
                "[1,\"{}… 68 more characters …{}\"]",
                "x".repeat(22),
                "x".repeat(10)
            ),
        ),
        (
            json!(["y".repeat(100)]),
            64,
            format!(
                "[\"{}… 68 more characters …{}\"]",
                "y".repeat(22),
                "y".repeat(10)
            ),
        ),
    ];
    for (value, budget, want) in cases {
        let (text, elided) = fit(&value, budget);
        assert_eq!(text, want, "budget {budget}");
        assert!(elided);
        assert!(text.len() <= budget, "{} > {budget}: {text}", text.len());
        serde_json::from_str::<Value>(&text).unwrap();
    }
}

#[test]
fn a_budget_below_the_minimum_is_the_minimum() {
    let (text, elided) = fit(&json!("z".repeat(500)), 1);
    assert!(elided);
    assert!(text.len() <= MIN_BUDGET, "{text}");
    assert_eq!(group(1_234_567), "1,234,567");
    assert_eq!(group(999), "999");
    assert_eq!(count(1, "more item", "more items"), "1 more item");
}

/// A small deterministic generator (xorshift64*), so the loop below is the same on every run.
/// `nodes` bounds the size of one generated value.
struct Gen(u64, usize);

impl Gen {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % below.max(1)
    }

    fn string(&mut self) -> String {
        const PIECES: [&str; 8] = [
            "a",
            "lorem ",
            "é",
            "日本",
            "\n",
            "\u{1b}[2K",
            "\u{202e}",
            "\"",
        ];
        let len = [0, 3, 40, 400][self.next(4) as usize];
        (0..len).map(|_| PIECES[self.next(8) as usize]).collect()
    }

    fn value(&mut self, depth: u32) -> Value {
        let pick = if depth == 0 || self.1 == 0 {
            self.next(4)
        } else {
            self.next(7)
        };
        self.1 = self.1.saturating_sub(1);
        match pick {
            0 => Value::Null,
            1 => json!(self.next(1_000_000)),
            2 => json!(self.next(2) == 1),
            3 => json!(self.string()),
            4 | 5 => {
                let n = [0, 1, 2, 5, 30, 200][self.next(6) as usize];
                Value::Array((0..n).map(|_| self.value(depth - 1)).collect())
            }
            _ => {
                let n = [0, 1, 3, 20, 100][self.next(5) as usize];
                Value::Object(
                    (0..n)
                        .map(|_| (self.string(), self.value(depth - 1)))
                        .collect(),
                )
            }
        }
    }
}

/// Whether `out` is `orig` with parts elided by [`fit`]'s markers and nothing else changed.
fn same_shape(orig: &Value, out: &Value) -> bool {
    match (orig, out) {
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            a.iter().zip(b).all(|(x, y)| same_shape(x, y)) || marked_array(a, b)
        }
        (Value::Array(a), Value::Array(b)) => marked_array(a, b),
        (Value::Object(a), Value::Object(b)) => b.iter().all(|(k, y)| match a.get(k) {
            Some(x) if same_shape(x, y) => true,
            _ => y
                .as_str()
                .is_some_and(|s| s.ends_with(" more keys …") || s.ends_with(" more key …")),
        }),
        (Value::String(a), Value::String(b)) => a == b || b.contains(" more character"),
        (a, b) => a == b,
    }
}

fn marked_array(a: &[Value], b: &[Value]) -> bool {
    let Some(at) = b.iter().position(|v| {
        v.as_str()
            .is_some_and(|s| s.starts_with("… ") && s.contains(" more item"))
    }) else {
        return false;
    };
    let tail = b.len() - at - 1;
    let left_out = a.len() - (b.len() - 1);
    b[at]
        == json!(format!(
            "… {} …",
            count(left_out, "more item", "more items")
        ))
        && a[..at].iter().zip(&b[..at]).all(|(x, y)| same_shape(x, y))
        && a[a.len() - tail..]
            .iter()
            .zip(&b[at + 1..])
            .all(|(x, y)| same_shape(x, y))
}

#[test]
fn generated_values_stay_valid_json_within_the_budget() {
    let mut g = Gen(0x9e37_79b9_7f4a_7c15, 0);
    let mut elided_count = 0;
    for i in 0..400 {
        g.1 = 1000;
        let value = g.value(4);
        let budget = [64, 100, 256, 1024, 4096][i % 5];
        let (text, elided) = fit(&value, budget);
        assert!(text.len() <= budget, "case {i}: {} > {budget}", text.len());
        let parsed: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("case {i}: not JSON ({e}): {text}"));
        assert!(
            !text.contains(['\n', '\u{1b}', '\u{202e}']),
            "case {i}: raw control text: {text}"
        );
        if elided {
            elided_count += 1;
            assert!(
                same_shape(&value, &parsed),
                "case {i}: shape changed: {text}"
            );
        } else {
            assert_eq!(parsed, value, "case {i}");
        }
    }
    // The loop exercises both paths.
    assert!((100..400).contains(&elided_count), "{elided_count} elided");
}
