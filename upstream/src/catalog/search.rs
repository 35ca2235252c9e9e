//! `search_tools`: BM25 ranking over tool names and descriptions.
//!
//! Names are split into words (`filesystem__read_text_file` → filesystem, read, text, file;
//! camelCase too) and weighted above description words, so a query like "read file" finds the
//! tool that says so in its name first.

use std::collections::HashMap;

use super::ToolInfo;
use super::typescript::js_call_form;

/// One ranked result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SearchHit {
    /// The name scripts call.
    pub name: String,
    /// One line of description.
    pub description: String,
    /// How to call it from a script, e.g. `await codemode.fs__read_file({ path })`.
    pub call: String,
    /// The BM25 score (higher is better).
    pub score: f64,
}

const K1: f64 = 1.2;
const B: f64 = 0.75;
/// Name words count this many times as much as description words.
const NAME_WEIGHT: usize = 3;

/// Splits text into lowercase words: on non-alphanumerics, `_`, and camelCase boundaries.
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            prev_lower = c.is_lowercase() || c.is_numeric();
            current.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Light stemming so that "files" finds "file" and "listing" finds "list".
fn stem(word: &str) -> String {
    for suffix in ["ing", "es", "s"] {
        if word.len() > suffix.len() + 2 && word.ends_with(suffix) {
            return word[..word.len() - suffix.len()].to_string();
        }
    }
    word.to_string()
}

fn terms(tool: &ToolInfo) -> Vec<String> {
    let mut out = Vec::new();
    let name_words: Vec<String> = words(&tool.name).iter().map(|w| stem(w)).collect();
    for _ in 0..NAME_WEIGHT {
        out.extend(name_words.iter().cloned());
    }
    out.extend(words(&tool.description).iter().map(|w| stem(w)));
    out
}

/// [`ToolInfo::search`].
pub(crate) fn search(tools: &[ToolInfo], query: &str, limit: usize) -> Vec<SearchHit> {
    let query_terms: Vec<String> = words(query).iter().map(|w| stem(w)).collect();
    let docs: Vec<Vec<String>> = tools.iter().map(terms).collect();
    let n = docs.len().max(1) as f64;
    let avg_len = docs.iter().map(Vec::len).sum::<usize>() as f64 / n;
    let mut df: HashMap<&str, usize> = HashMap::new();
    for doc in &docs {
        let mut seen: Vec<&str> = doc.iter().map(String::as_str).collect();
        seen.sort_unstable();
        seen.dedup();
        for t in seen {
            *df.entry(t).or_default() += 1;
        }
    }
    let mut scored: Vec<(f64, &ToolInfo)> = tools
        .iter()
        .zip(&docs)
        .map(|(tool, doc)| {
            if query_terms.is_empty() {
                return (1.0, tool);
            }
            let len = doc.len() as f64;
            let score = query_terms
                .iter()
                .map(|q| {
                    let tf = doc.iter().filter(|t| *t == q).count() as f64;
                    if tf == 0.0 {
                        // A query word that is a prefix of a name word still counts a little.
                        return if doc
                            .iter()
                            .any(|t| t.starts_with(q.as_str()) && q.len() >= 3)
                        {
                            0.1
                        } else {
                            0.0
                        };
                    }
                    let d = df.get(q.as_str()).copied().unwrap_or(0) as f64;
                    let idf = ((n - d + 0.5) / (d + 0.5) + 1.0).ln();
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg_len.max(1.0)))
                })
                .sum::<f64>();
            (score, tool)
        })
        .filter(|(score, _)| *score > 0.0)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    scored
        .into_iter()
        .take(limit)
        .map(|(score, tool)| SearchHit {
            name: tool.name.clone(),
            description: tool.summary(),
            call: js_call_form(tool),
            score: (score * 1000.0).round() / 1000.0,
        })
        .collect()
}

impl ToolInfo {
    /// Ranks `tools` against `query`; returns at most `limit` hits with a positive score, best
    /// first (ties by name). An empty query lists tools by name.
    pub fn search(tools: &[ToolInfo], query: &str, limit: usize) -> Vec<SearchHit> {
        search(tools, query, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: description.into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
        }
    }

    #[test]
    fn splits_names_and_camel_case() {
        assert_eq!(
            words("filesystem__read_text_file"),
            ["filesystem", "read", "text", "file"]
        );
        assert_eq!(words("getCurrentTime"), ["get", "current", "time"]);
        assert_eq!(
            words("trigger-long-running-operation"),
            ["trigger", "long", "running", "operation"]
        );
    }

    #[test]
    fn ranks_name_matches_first() {
        let tools = vec![
            tool("fs__write_file", "Create or overwrite a file"),
            tool(
                "fs__read_text_file",
                "Read the complete contents of a file as text",
            ),
            tool(
                "time__get_current_time",
                "Get the current time in a timezone",
            ),
            tool("everything__echo", "Echoes back the input"),
        ];
        let cases: &[(&str, &str)] = &[
            ("read file", "fs__read_text_file"),
            ("current time", "time__get_current_time"),
            ("echo", "everything__echo"),
            ("files", "fs__read_text_file"),
            ("timezone", "time__get_current_time"),
        ];
        for (query, best) in cases {
            let hits = search(&tools, query, 3);
            assert_eq!(
                hits.first().map(|h| h.name.as_str()),
                Some(*best),
                "{query}: {hits:?}"
            );
        }
        assert!(search(&tools, "zebra", 3).is_empty());
        assert_eq!(search(&tools, "", 2).len(), 2);
        assert_eq!(search(&tools, "file", 1).len(), 1);
    }
}
