//! "Did you mean …": the closest existing tool names to a misspelt one.

/// Up to `max` names from `candidates` closest to `name` (case-insensitive edit distance, then
/// substring matches), nearest first. Names too far away to be a plausible typo are left out.
pub fn closest(name: &str, candidates: &[String], max: usize) -> Vec<String> {
    let needle = name.to_lowercase();
    let mut scored: Vec<(usize, &String)> = candidates
        .iter()
        .filter_map(|c| {
            let hay = c.to_lowercase();
            let distance = strsim::levenshtein(&needle, &hay);
            let budget = (needle.chars().count().max(hay.chars().count()) / 3).max(2);
            if distance <= budget {
                Some((distance, c))
            } else if hay.contains(&needle) || (needle.len() >= 3 && needle.contains(&hay)) {
                Some((budget + 1, c))
            } else {
                // `server__tool`: a match on the tool part alone is still a good hint.
                let tail = hay.rsplit("__").next().unwrap_or(&hay);
                (strsim::levenshtein(&needle, tail) <= 2).then_some((budget + 2, c))
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

/// The name in `candidates` that `name` begins followed by a dash (the shortest, then the first
/// in order): `codemode.a-b(...)` reads as `codemode.a - b(...)`, so a script that meant the
/// tool `a-b` may call `a`.
pub fn dashed<'a>(name: &str, candidates: &'a [String]) -> Option<&'a str> {
    candidates
        .iter()
        .filter(|c| {
            c.len() > name.len() + 1 && c.starts_with(name) && c.as_bytes()[name.len()] == b'-'
        })
        .min_by_key(|c| c.len())
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_name_cut_at_a_dash_points_at_the_dashed_tool() {
        let tools = names(&[
            "everything__get-sum-all",
            "everything__get-sum",
            "everything__get",
        ]);
        assert_eq!(
            dashed("everything__get", &tools),
            Some("everything__get-sum")
        );
        assert_eq!(
            dashed("everything__get-sum", &tools),
            Some("everything__get-sum-all")
        );
        assert_eq!(dashed("everything__ge", &tools), None);
        assert_eq!(dashed("everything__get-sum-all", &tools), None);
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
    fn ranks_nearest_first_and_caps_the_count() {
        let tools = names(&["fs__read_file", "fs__read_files", "fs__reap_file", "echo"]);
        assert_eq!(
            closest("fs__read_file", &tools, 2),
            ["fs__read_file", "fs__read_files"]
        );
        assert_eq!(
            closest("fs__read_file", &tools, 5),
            ["fs__read_file", "fs__read_files", "fs__reap_file"]
        );
        assert_eq!(closest("fs__read_file", &tools, 0), Vec::<String>::new());
    }

    #[test]
    fn equal_distances_sort_by_name() {
        let tools = names(&["tab", "cat", "bat"]);
        assert_eq!(closest("xat", &tools, 3), ["bat", "cat", "tab"]);
    }

    #[test]
    fn counts_characters_not_bytes() {
        // One substituted character, two bytes in UTF-8: still distance 1.
        let tools = names(&["café_lookup"]);
        assert_eq!(closest("cafe_lookup", &tools, 1), ["café_lookup"]);
    }
}
