//! [`AuditWriter`]: JSON Lines files, one per UTC day.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{AuditRecord, AuditSink};

/// Appends records to `<dir>/YYYY-MM-DD.jsonl` (the UTC day of each record's `ts`), one JSON
/// object per line, each line written with a single `write` on a file opened for appending,
/// under a lock: writers in this process never interleave, and lines from other processes
/// appending to the same file stay whole.
///
/// Never fails a caller: a record that cannot be written is reported with `tracing::warn!`
/// and counted ([`AuditWriter::failures`]).
#[derive(Debug)]
pub struct AuditWriter {
    dir: PathBuf,
    /// The open file and the day it is for.
    file: Mutex<Option<(String, File)>>,
    failures: AtomicU64,
}

impl AuditWriter {
    /// A writer into `dir`, which is created (with its parents) if missing.
    ///
    /// # Errors
    ///
    /// When `dir` cannot be created, so that a misconfigured log is noticed at start-up
    /// rather than at the first record.
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        Ok(AuditWriter {
            dir,
            file: Mutex::new(None),
            failures: AtomicU64::new(0),
        })
    }

    /// The directory written to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many records could not be written.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    fn write_line(&self, day: &str, line: &[u8]) -> io::Result<()> {
        // A panic while holding the lock leaves at worst a closed or stale handle.
        let mut slot = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_none_or(|(d, _)| d != day) {
            *slot = None;
            // The directory may have been removed since `open`.
            std::fs::create_dir_all(&self.dir)?;
            let path = self.dir.join(format!("{day}.jsonl"));
            let file = OpenOptions::new().create(true).append(true).open(path)?;
            *slot = Some((day.to_string(), file));
        }
        let Some((_, file)) = slot.as_mut() else {
            return Ok(());
        };
        let written = file.write(line)?;
        if written != line.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short write: {written} of {} bytes", line.len()),
            ));
        }
        Ok(())
    }
}

impl AuditSink for AuditWriter {
    fn record(&self, rec: AuditRecord) {
        let result = serde_json::to_vec(&rec)
            .map_err(io::Error::other)
            .and_then(|mut line| {
                line.push(b'\n');
                self.write_line(&day_of(rec.ts()), &line)
            });
        if let Err(e) = result {
            let n = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::warn!(dir = %self.dir.display(), failures = n, "cannot write an audit record: {e}");
        }
    }
}

/// The UTC day (`YYYY-MM-DD`) a record's `ts` starts with; today's when `ts` does not start
/// with a date (the file name never comes from anything else).
fn day_of(ts: &str) -> String {
    let is_date = |d: &str| {
        d.len() == 10
            && d.bytes().enumerate().all(|(i, b)| {
                if i == 4 || i == 7 {
                    b == b'-'
                } else {
                    b.is_ascii_digit()
                }
            })
    };
    match ts.get(..10) {
        Some(d) if is_date(d) => d.to_string(),
        _ => super::time::now_rfc3339()[..10].to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DispositionKind;
    use crate::audit::{Decision, ToolCallAuditRecord};
    use codemode_runtime::{CallStatus, EvalId};
    use std::sync::Arc;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("codemode-audit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn rec(ts: &str, call_id: u64) -> AuditRecord {
        AuditRecord::ToolCall(ToolCallAuditRecord {
            ts: ts.into(),
            eval_id: EvalId(1),
            call_id,
            session_id: None,
            profile: None,
            tool: "t".repeat(500),
            args_sha256: String::new(),
            args: None,
            disposition: DispositionKind::Allow,
            decision: Decision::Allowed,
            reason: None,
            status: CallStatus::Ok,
            duration_ms: 0.0,
        })
    }

    #[test]
    fn one_file_per_day_one_line_per_record_concurrently() {
        let dir = temp_dir("days").join("nested");
        let w = Arc::new(AuditWriter::open(&dir).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let w = w.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        let day = if i % 2 == 0 {
                            "2024-05-01"
                        } else {
                            "2024-05-02"
                        };
                        w.record(rec(&format!("{day}T00:00:00.000Z"), t * 100 + i));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(w.failures(), 0);
        let mut ids = Vec::new();
        for day in ["2024-05-01", "2024-05-02"] {
            let text = std::fs::read_to_string(dir.join(format!("{day}.jsonl"))).unwrap();
            for line in text.lines() {
                let r: AuditRecord = serde_json::from_str(line).unwrap();
                assert!(r.ts().starts_with(day));
                if let AuditRecord::ToolCall(r) = r {
                    ids.push(r.call_id);
                }
            }
        }
        ids.sort_unstable();
        let want: Vec<u64> = (0..8)
            .flat_map(|t| (0..50).map(move |i| t * 100 + i))
            .collect();
        assert_eq!(ids, want);
        // Appends to what is there.
        w.record(rec("2024-05-01T01:00:00.000Z", 999));
        drop(w);
        let w = AuditWriter::open(&dir).unwrap();
        w.record(rec("2024-05-01T02:00:00.000Z", 1000));
        let text = std::fs::read_to_string(dir.join("2024-05-01.jsonl")).unwrap();
        assert_eq!(text.lines().count(), 8 * 25 + 2);
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn days() {
        let today = &crate::audit::now_rfc3339()[..10];
        let cases = [
            ("2024-05-01T00:00:00.000Z", "2024-05-01"),
            ("../../etc/passwd", today),
            ("", today),
            ("2024-5-1T", today),
            ("abcd-ef-ghT", today),
        ];
        for (ts, want) in cases {
            assert_eq!(day_of(ts), want, "{ts}");
        }
    }

    #[test]
    fn failures_are_counted_not_raised() {
        let dir = temp_dir("fail");
        let w = AuditWriter::open(&dir).unwrap();
        // Make the day's file impossible to open: a directory in its place.
        std::fs::create_dir_all(dir.join("2024-05-01.jsonl")).unwrap();
        w.record(rec("2024-05-01T00:00:00.000Z", 1));
        w.record(rec("2024-05-01T00:00:00.000Z", 2));
        assert_eq!(w.failures(), 2);
        w.record(rec("2024-05-02T00:00:00.000Z", 3));
        assert_eq!(w.failures(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn open_fails_on_an_impossible_directory() {
        let dir = temp_dir("file");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("plain-file");
        std::fs::write(&file, "x").unwrap();
        assert!(AuditWriter::open(file.join("sub")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
