//! "Did you mean …": the closest existing tool names to a misspelt one.

/// Up to `max` names from `candidates` closest to `name` (case-insensitive edit distance, then
/// substring matches), nearest first. Names too far away to be a plausible typo are left out.
pub fn closest(name: &str, candidates: &[String], max: usize) -> Vec<String> {
    let needle = name.to_lowercase();
    let mut scored: Vec<(usize, &String)> = candidates
        .iter()
        .filter_map(|c| {
            let hay = c.to_lowercase();
            let distance = levenshtein(&needle, &hay);
            let budget = (needle.chars().count().max(hay.chars().count()) / 3).max(2);
            if distance <= budget {
                Some((distance, c))
            } else if hay.contains(&needle) || (needle.len() >= 3 && needle.contains(&hay)) {
                Some((budget + 1, c))
            } else {
                // `server__tool`: a match on the tool part alone is still a good hint.
                let tail = hay.rsplit("__").next().unwrap_or(&hay);
                (levenshtein(&needle, tail) <= 2).then_some((budget + 2, c))
            }
        })
        .collect();
    scored.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(max)
        .map(|(_, c)| c.clone())
        .collect()
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn suggestions() {
        let tools = names(&[
            "fs__read_file",
            "fs__write_file",
            "time__get_current_time",
            "echo",
        ]);
        let cases: &[(&str, &[&str])] = &[
            ("fs__read_fil", &["fs__read_file"]),
            ("FS__READ_FILE", &["fs__read_file"]),
            ("read_file", &["fs__read_file"]),
            ("ecko", &["echo"]),
            ("zzzzzzzz", &[]),
        ];
        for (name, want) in cases {
            let got = closest(name, &tools, 3);
            assert_eq!(
                got.first().map(String::as_str),
                want.first().copied(),
                "{name}: {got:?}"
            );
        }
    }

    #[test]
    fn distance() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("same", "same"), 0);
    }
}
