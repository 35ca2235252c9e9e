//! [`verify_audit_dir`]: checks the hash chain of every file of an audit directory.

use std::io;
use std::path::{Path, PathBuf};

use codemode_config::AuditKey;
use serde_json::Value;

use super::chain::{chain_hash, genesis, unseal};

/// The end of one verified file: the head hash to keep elsewhere (an *anchor*).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// The file.
    pub file: PathBuf,
    /// How many records it holds.
    pub records: u64,
    /// The `hash` of its last line (the genesis hash for an empty file).
    pub head: String,
}

/// Where and why a chain is broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainBreak {
    /// The file.
    pub file: PathBuf,
    /// The first line (1-based) that does not verify.
    pub line: u64,
    /// Why, in words.
    pub why: &'static str,
}

/// What [`Verified::of_dir`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    /// Every chain holds: each file's head, by file name.
    Ok(Vec<ChainHead>),
    /// The first break found (files in name order, lines in order).
    Broken(ChainBreak),
}

impl Verified {
    /// Checks every `*.jsonl` file of `dir` (not its subdirectories), in name order: each line
    /// must be sealed (end with `"prev_hash"` and `"hash"`, see `chain`), its
    /// `hash` must be the hash of its body under `key` (SHA-256 when `None`), and its `prev_hash`
    /// the previous line's `hash` (the genesis hash of the file's name for the first line).
    ///
    /// # What it proves, and what not
    ///
    /// - A record edited in place breaks at its own line (its hash no longer matches); a record
    ///   removed, inserted or moved breaks at the line where it was or now is (the `prev_hash`
    ///   no longer matches); a file renamed breaks at line 1.
    /// - Removing the *last* records of a file (or the whole file) leaves a valid, shorter chain:
    ///   only a head hash kept elsewhere ([`ChainHead::head`]) shows it.
    /// - With SHA-256 anyone can recompute a whole chain after editing it; with HMAC only who
    ///   holds the key can — and that includes every writer.
    ///
    /// # Errors
    ///
    /// When `dir` or one of its files cannot be read.
    pub fn of_dir(dir: &Path, key: Option<&AuditKey>) -> io::Result<Verified> {
        let mut heads = Vec::new();
        for file in audit_files(dir)? {
            let text = std::fs::read(&file)?;
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match verify_file(&text, &name, key) {
                Ok((records, head)) => heads.push(ChainHead {
                    file,
                    records,
                    head,
                }),
                Err((line, why)) => return Ok(Verified::Broken(ChainBreak { file, line, why })),
            }
        }
        Ok(Verified::Ok(heads))
    }
}

/// The `*.jsonl` regular files of `dir`, sorted by name (day files sort by day).
pub(super) fn audit_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "jsonl") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Verifies one file's bytes: `(records, head)` or `(line, why)`.
fn verify_file(
    text: &[u8],
    name: &str,
    key: Option<&AuditKey>,
) -> Result<(u64, String), (u64, &'static str)> {
    let mut expected = genesis(key, name);
    let mut count = 0u64;
    let body = match text.strip_suffix(b"\n") {
        Some(body) => body,
        None if text.is_empty() => return Ok((0, expected)),
        None => return Err((lines(text), "the last line is incomplete (no newline)")),
    };
    for (i, raw) in body.split(|&b| b == b'\n').enumerate() {
        let line = i as u64 + 1;
        let text = std::str::from_utf8(raw).map_err(|_| (line, "the line is not UTF-8"))?;
        let (sealed, hash) =
            unseal(text).ok_or((line, "the line does not end with a `hash` field"))?;
        let prev = match serde_json::from_str::<Value>(&sealed) {
            Ok(Value::Object(map)) => match map.get("prev_hash") {
                Some(Value::String(p)) => p.clone(),
                _ => return Err((line, "the line has no `prev_hash` field")),
            },
            _ => return Err((line, "the line is not a JSON object")),
        };
        if chain_hash(key, sealed.as_bytes()) != hash {
            return Err((line, "the record was edited: its hash does not match it"));
        }
        if prev != expected {
            return Err((
                line,
                "`prev_hash` is not the hash of the previous record: a record was removed, inserted or moved",
            ));
        }
        expected = hash.to_string();
        count += 1;
    }
    Ok((count, expected))
}

/// How many lines `text` has (the last one counted even without a newline).
fn lines(text: &[u8]) -> u64 {
    text.split(|&b| b == b'\n').count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::chain::seal;

    fn write_chain(dir: &Path, name: &str, n: usize, key: Option<&AuditKey>) -> Vec<String> {
        let mut prev = genesis(key, name);
        let mut out = Vec::new();
        for i in 0..n {
            let (line, hash) = seal(key, &format!(r#"{{"event":"eval","n":{i}}}"#), &prev);
            out.push(line);
            prev = hash;
        }
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), lines_text(&out)).unwrap();
        out
    }

    fn lines_text(lines: &[String]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("codemode-verify-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn broken(dir: &Path, key: Option<&AuditKey>) -> (u64, &'static str) {
        match Verified::of_dir(dir, key).unwrap() {
            Verified::Broken(b) => (b.line, b.why),
            Verified::Ok(heads) => panic!("verified: {heads:?}"),
        }
    }

    #[test]
    fn detects_edits_removals_reorders_but_not_truncation() {
        let d = dir("tamper");
        let name = "2024-05-01.jsonl";
        let file = d.join(name);
        let lines = write_chain(&d, name, 4, None);
        // An empty second file verifies, with the genesis hash as its head.
        std::fs::write(d.join("2024-05-02.jsonl"), "").unwrap();
        std::fs::write(d.join("notes.txt"), "not a log").unwrap();
        let Verified::Ok(heads) = Verified::of_dir(&d, None).unwrap() else {
            panic!("broken")
        };
        let last_hash = unseal(&lines[3]).unwrap().1.to_string();
        assert_eq!(
            heads,
            [
                ChainHead {
                    file: file.clone(),
                    records: 4,
                    head: last_hash
                },
                ChainHead {
                    file: d.join("2024-05-02.jsonl"),
                    records: 0,
                    head: genesis(None, "2024-05-02.jsonl")
                }
            ]
        );
        let edited = "the record was edited: its hash does not match it";
        let moved = "`prev_hash` is not the hash of the previous record: a record was removed, inserted or moved";
        let cases: Vec<(Vec<String>, (u64, &str))> = vec![
            // Edit the second record, then the last.
            (
                vec![
                    lines[0].clone(),
                    lines[1].replace("\"n\":1", "\"n\":7"),
                    lines[2].clone(),
                    lines[3].clone(),
                ],
                (2, edited),
            ),
            (
                vec![
                    lines[0].clone(),
                    lines[1].clone(),
                    lines[2].clone(),
                    lines[3].replace("\"n\":3", "\"n\":8"),
                ],
                (4, edited),
            ),
            // Remove the second; the first; swap the second and third.
            (
                vec![lines[0].clone(), lines[2].clone(), lines[3].clone()],
                (2, moved),
            ),
            (vec![lines[1].clone(), lines[2].clone()], (1, moved)),
            (
                vec![
                    lines[0].clone(),
                    lines[2].clone(),
                    lines[1].clone(),
                    lines[3].clone(),
                ],
                (2, moved),
            ),
            // A line without the chain's fields.
            (
                vec![lines[0].clone(), r#"{"event":"eval"}"#.to_string()],
                (2, "the line does not end with a `hash` field"),
            ),
        ];
        for (content, want) in cases {
            std::fs::write(&file, lines_text(&content)).unwrap();
            assert_eq!(broken(&d, None), want, "{content:?}");
        }
        // A partial last line.
        std::fs::write(&file, format!("{}{}", lines_text(&lines[..1]), "{\"ev")).unwrap();
        assert_eq!(
            broken(&d, None),
            (2, "the last line is incomplete (no newline)")
        );
        // Renamed: the genesis hash no longer matches.
        std::fs::write(&file, lines_text(&lines)).unwrap();
        std::fs::rename(&file, d.join("2024-05-03.jsonl")).unwrap();
        assert_eq!(broken(&d, None), (1, moved));
        std::fs::rename(d.join("2024-05-03.jsonl"), &file).unwrap();
        // Truncating the tail leaves a valid chain: only the anchored head shows it.
        std::fs::write(&file, lines_text(&lines[..2])).unwrap();
        let Verified::Ok(heads) = Verified::of_dir(&d, None).unwrap() else {
            panic!("broken")
        };
        assert_eq!(heads[0].records, 2);
        assert_eq!(heads[0].head, unseal(&lines[1]).unwrap().1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn hmac_chains_need_their_key() {
        let d = dir("hmac");
        let key = AuditKey::new("s3cret");
        write_chain(&d, "2024-05-01.jsonl", 2, Some(&key));
        assert!(matches!(
            Verified::of_dir(&d, Some(&key)).unwrap(),
            Verified::Ok(h) if h[0].records == 2
        ));
        let edited = "the record was edited: its hash does not match it";
        assert_eq!(broken(&d, None), (1, edited));
        assert_eq!(broken(&d, Some(&AuditKey::new("other"))), (1, edited));
        // And a SHA-256 chain does not verify as an HMAC one.
        let d2 = dir("hmac-plain");
        write_chain(&d2, "2024-05-01.jsonl", 1, None);
        assert_eq!(broken(&d2, Some(&key)), (1, edited));
        assert!(Verified::of_dir(&d.join("missing"), None).is_err());
        std::fs::remove_dir_all(&d).unwrap();
        std::fs::remove_dir_all(&d2).unwrap();
    }
}
