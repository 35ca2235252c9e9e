//! [`AuditWriter`]: JSON Lines files, one per UTC day, written by a thread of their own,
//! each line chained to the previous one ([`chain`](super::chain)) under a file lock.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use codemode_config::AuditKey;
use codemode_runtime::private_file::{self, Existing};

use super::chain::{chain_hash, genesis, seal, unseal};
use super::{AuditRecord, AuditSink};

/// How many bytes of serialised records may wait for the writer thread at once (16 MiB), by
/// default. Past it, records are dropped and counted: see [`AuditWriter`].
pub(crate) const DEFAULT_AUDIT_QUEUE_BYTES: usize = 16 << 20;

/// Appends records to `<dir>/YYYY-MM-DD.jsonl` (the UTC day of each record's `ts`), one JSON
/// object per line, each ending with `prev_hash` and `hash` (the chain: see
/// [`Verified::of_dir`](crate::Verified::of_dir) for what it proves).
///
/// # Files, locks and the chain
///
/// Files are created with mode `0600` and opened append-only. Each append takes an exclusive
/// lock on the file (`flock`), reads the hash of the file's last line if another process
/// appended since (or the genesis hash of an empty file), writes the sealed line with a single
/// `write`, and releases the lock: processes of one machine sharing a directory keep one valid
/// chain per file. (Nodes of a cluster write their own directories: `flock` on network file
/// systems is not to be trusted.)
///
/// # Threads and blocking
///
/// [`record`](AuditSink::record) never touches the disk: it serialises the record and queues
/// the line for a writer thread that this writer owns, so a slow or stalled disk never blocks
/// the async task that made a tool call. The thread writes the lines in the order they were
/// queued, each with a single `write` on a file opened for appending: lines from other
/// processes appending to the same file stay whole.
///
/// [`flush`](AuditSink::flush) waits until every line queued before it is written (handed to
/// the operating system, not `fsync`ed): call it before reading the files, and at shutdown.
/// It blocks, so async code calls it from `tokio::task::spawn_blocking`. Dropping the writer
/// flushes too, and stops the thread (see [`Drop`](#impl-Drop-for-AuditWriter) for how it
/// waits on an async runtime).
///
/// # Failures and a stalled disk
///
/// Never fails a caller: a record that cannot be written is reported with `tracing::warn!`
/// and counted ([`AuditWriter::failures`]). The queue is bounded in bytes
/// ([`AuditWriter::DEFAULT_QUEUE_BYTES`]): when the disk stalls and the queue is full, further
/// records are dropped, counted as failures and warned about, rather than blocking every tool
/// call of every eval behind the disk or growing memory without bound. (A record larger than
/// the whole bound is still queued when the queue is empty, so one big record is not lost to
/// the bound alone.)
///
/// ```
/// use codemode_policies::{AuditRecord, AuditSink, AuditWriter, EvalAuditRecord};
/// # let dir = std::env::temp_dir().join(format!("codemode-doc-audit-{}", std::process::id()));
/// let writer = AuditWriter::open(&dir)?;
/// writer.record(AuditRecord::Eval(EvalAuditRecord {
///     ts: "2024-05-01T12:00:00.000Z".into(),
///     eval_id: "7f3a9c01d2e4b5a6-1".into(),
///     caller: "local".into(),
///     session_id: None,
///     profile: None,
///     code_sha256: String::new(),
///     ok: true,
///     error_kind: None,
///     fuel_used: 0,
///     wall_ms: 1.0,
///     tool_calls: 0,
/// }));
/// writer.flush();
/// let text = std::fs::read_to_string(dir.join("2024-05-01.jsonl"))?;
/// assert_eq!(text.lines().count(), 1);
/// assert_eq!(writer.failures(), 0);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct AuditWriter {
    shared: Arc<Shared>,
    /// The queue to the writer thread; `None` only while dropping.
    queue: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    max_queued_bytes: usize,
}

/// What the caller and the writer thread both see.
#[derive(Debug)]
struct Shared {
    dir: PathBuf,
    /// The key of HMAC chains; `None` for SHA-256.
    key: Option<AuditKey>,
    failures: AtomicU64,
    /// Bytes of lines queued and not yet written.
    queued_bytes: AtomicUsize,
}

impl Shared {
    fn fail(&self, why: &dyn std::fmt::Display) {
        let n = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::warn!(dir = %self.dir.display(), failures = n, "cannot write an audit record: {why}");
    }
}

/// Work for the writer thread.
enum Job {
    /// Seal `line` (a serialised record) and append it to the file of `day`.
    Line { day: String, line: String },
    /// Everything queued before has been written: say so.
    Flush(mpsc::SyncSender<()>),
}

impl AuditWriter {
    /// How many bytes of serialised records may wait for the writer thread at once by default
    /// (16 MiB); past it, records are dropped and counted.
    pub const DEFAULT_QUEUE_BYTES: usize = DEFAULT_AUDIT_QUEUE_BYTES;

    /// A writer into `dir`, which is created (with its parents) if missing, with a queue of
    /// at most [`AuditWriter::DEFAULT_QUEUE_BYTES`].
    ///
    /// # Errors
    ///
    /// When `dir` cannot be created, so that a misconfigured log is noticed at start-up
    /// rather than at the first record, or when the writer thread cannot be started.
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        Self::open_keyed(dir, None)
    }

    /// As [`open`](Self::open), with HMAC-SHA-256 chains under `key` (`audit.keyEnv`), or
    /// SHA-256 ones for `None`.
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open).
    pub fn open_keyed(dir: impl Into<PathBuf>, key: Option<AuditKey>) -> io::Result<Self> {
        Self::with_queue_bytes(dir.into(), key, DEFAULT_AUDIT_QUEUE_BYTES)
    }

    fn with_queue_bytes(
        dir: PathBuf,
        key: Option<AuditKey>,
        max_queued_bytes: usize,
    ) -> io::Result<Self> {
        std::fs::create_dir_all(&dir)?;
        let shared = Arc::new(Shared {
            dir,
            key,
            failures: AtomicU64::new(0),
            queued_bytes: AtomicUsize::new(0),
        });
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("codemode-audit".into())
            .spawn({
                let shared = shared.clone();
                move || write_until_closed(&shared, &rx)
            })?;
        Ok(AuditWriter {
            shared,
            queue: Some(tx),
            thread: Some(thread),
            max_queued_bytes,
        })
    }

    /// The directory written to.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// How many records could not be written (including those dropped because the queue was
    /// full). Records still queued are not counted until they fail: [`flush`](Self::flush)
    /// first for a final count.
    pub fn failures(&self) -> u64 {
        self.shared.failures.load(Ordering::Relaxed)
    }

    /// Waits until every record queued before this call is written (or counted as failed).
    /// Blocks the calling thread: from async code, call it inside `spawn_blocking`.
    pub fn flush(&self) {
        let (done, wait) = mpsc::sync_channel(1);
        if self.send(Job::Flush(done)) {
            // An error means the thread is gone; nothing is left to wait for.
            let _ = wait.recv();
        }
    }

    /// Queues `job`; false if the writer thread is gone (it exits only on drop, or if it
    /// panicked).
    fn send(&self, job: Job) -> bool {
        self.queue.as_ref().is_some_and(|tx| tx.send(job).is_ok())
    }

    /// Reserves `len` bytes of the queue; false when the queue is full.
    fn reserve(&self, len: usize) -> bool {
        self.shared
            .queued_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                (queued == 0 || queued.saturating_add(len) <= self.max_queued_bytes)
                    .then(|| queued.saturating_add(len))
            })
            .is_ok()
    }
}

impl AuditSink for AuditWriter {
    fn record(&self, rec: AuditRecord) {
        let line = match serde_json::to_string(&rec) {
            Ok(line) => line,
            Err(e) => return self.shared.fail(&e),
        };
        let len = line.len();
        if !self.reserve(len) {
            return self.shared.fail(&format_args!(
                "the queue to the disk is full ({} bytes waiting): the disk is not keeping up",
                self.shared.queued_bytes.load(Ordering::Relaxed)
            ));
        }
        let day = day_of(rec.ts());
        if !self.send(Job::Line { day, line }) {
            self.shared.queued_bytes.fetch_sub(len, Ordering::AcqRel);
            self.shared.fail(&"the audit writer thread has stopped");
        }
    }

    fn flush(&self) {
        AuditWriter::flush(self);
    }
}

impl Drop for AuditWriter {
    /// Closes the queue and waits for the thread to write what is left. On a worker of a
    /// multi-threaded tokio runtime the wait goes through `block_in_place`, so that the
    /// runtime moves its other tasks to other threads meanwhile.
    fn drop(&mut self) {
        drop(self.queue.take());
        let Some(thread) = self.thread.take() else {
            return;
        };
        // A panic in the thread has already been reported by the panic hook.
        let join = move || drop(thread.join());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime)
                if runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread =>
            {
                tokio::task::block_in_place(join);
            }
            _ => join(),
        }
    }
}

/// The file the writer thread has open: its day, and what it knows of the file's end.
struct OpenFile {
    day: String,
    path: PathBuf,
    name: String,
    file: File,
    /// The file's length after our last append, and the hash of the line we appended: while
    /// the length is unchanged, nobody else appended, and the tail need not be read again.
    last: Option<(u64, String)>,
}

/// The writer thread: writes each queued line until every sender is gone.
fn write_until_closed(shared: &Shared, jobs: &mpsc::Receiver<Job>) {
    let mut file: Option<OpenFile> = None;
    for job in jobs {
        match job {
            Job::Line { day, line } => {
                if let Err(e) = write_line(shared, &mut file, &day, &line) {
                    // A handle that failed may be stale: reopen for the next line.
                    file = None;
                    shared.fail(&e);
                }
                shared.queued_bytes.fetch_sub(line.len(), Ordering::AcqRel);
            }
            Job::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

/// Seals `record` after the last line of the file of `day` and appends it, under the file's
/// lock, opening the file (and the directory, which may have been removed since `open`) when
/// `file` is for another day or none.
fn write_line(
    shared: &Shared,
    file: &mut Option<OpenFile>,
    day: &str,
    record: &str,
) -> io::Result<()> {
    let open = match file {
        Some(f) if f.day == day => f,
        _ => {
            *file = None;
            // Only the files are made private: the directory gets the umask's mode.
            std::fs::create_dir_all(&shared.dir)?;
            let name = format!("{day}.jsonl");
            let path = shared.dir.join(&name);
            let opened = private_file::open(&path, Existing::Append)?;
            file.insert(OpenFile {
                day: day.to_string(),
                path,
                name,
                file: opened,
                last: None,
            })
        }
    };
    open.file.lock()?;
    let result = append_sealed(shared.key.as_ref(), open, record);
    // Closing the handle on error releases the lock too; an unlock error changes nothing.
    let _ = open.file.unlock();
    result
}

/// With the lock held: finds the previous hash, seals `record` and writes it.
fn append_sealed(key: Option<&AuditKey>, open: &mut OpenFile, record: &str) -> io::Result<()> {
    let meta = open.file.metadata()?;
    // A FIFO or device cannot be read back: chain from what this writer wrote.
    let regular = meta.is_file();
    let len = if regular { meta.len() } else { 0 };
    let (prev, newline_first) = match &open.last {
        Some((known, hash)) if !regular || *known == len => (hash.clone(), false),
        _ if len == 0 => (genesis(key, &open.name), false),
        _ => {
            let (last, complete) = last_line(&open.path, len)?;
            let prev = match std::str::from_utf8(&last).ok().and_then(unseal) {
                Some((_, hash)) => hash.to_string(),
                // Not a sealed line (an older codemode's, or a partial one): chain to its
                // bytes; verify reports it, and the chain goes on after it.
                None => chain_hash(key, &last),
            };
            (prev, !complete)
        }
    };
    let (line, hash) = seal(key, record, &prev);
    let mut bytes = Vec::with_capacity(line.len() + 2);
    if newline_first {
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    let written = open.file.write(&bytes)?;
    if written != bytes.len() {
        open.last = None;
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("short write: {written} of {} bytes", bytes.len()),
        ));
    }
    open.last = Some((len + bytes.len() as u64, hash));
    Ok(())
}

/// The last line of the file at `path` of `len` bytes (without its newline), and whether it
/// ended with one.
fn last_line(path: &Path, len: u64) -> io::Result<(Vec<u8>, bool)> {
    const CHUNK: u64 = 8 << 10;
    let mut f = File::open(path)?;
    let mut tail: Vec<u8> = Vec::new();
    let mut pos = len;
    loop {
        let step = pos.min(CHUNK);
        pos -= step;
        f.seek(SeekFrom::Start(pos))?;
        let mut chunk = vec![0; usize::try_from(step).unwrap_or(usize::MAX)];
        f.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
        let complete = tail.last() == Some(&b'\n');
        let body = if complete {
            &tail[..tail.len() - 1]
        } else {
            &tail[..]
        };
        if let Some(i) = body.iter().rposition(|&b| b == b'\n') {
            return Ok((body[i + 1..].to_vec(), complete));
        }
        if pos == 0 {
            return Ok((body.to_vec(), complete));
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
    use codemode_runtime::CallStatus;
    use std::sync::Arc;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("codemode-audit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn rec(ts: &str, call_id: u64) -> AuditRecord {
        AuditRecord::ToolCall(ToolCallAuditRecord {
            ts: ts.into(),
            eval_id: "e-1".into(),
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
            caller: "local".into(),
            risk: crate::Risk::Medium,
            channel: None,
            decided_by: None,
            decision_reason: None,
            redacted_paths: Vec::new(),
            output_sha256: None,
            stage: None,
            classification: None,
            approver_right: None,
            caller_permissions: Vec::new(),
            timeout_seconds: None,
            joined_ask: None,
            question: None,
            options: None,
            answer: None,
            metadata: None,
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
        w.flush();
        assert_eq!(w.failures(), 0);
        let mut ids = Vec::new();
        for day in ["2024-05-01", "2024-05-02"] {
            let text = std::fs::read_to_string(dir.join(format!("{day}.jsonl"))).unwrap();
            let mut in_file = Vec::new();
            for line in text.lines() {
                let r: AuditRecord = serde_json::from_str(line).unwrap();
                assert!(r.ts().starts_with(day));
                if let AuditRecord::ToolCall(r) = r {
                    in_file.push(r.call_id);
                }
            }
            // Each thread's records are in the order it recorded them.
            for t in 0..8 {
                let mine: Vec<u64> = in_file.iter().copied().filter(|id| id / 100 == t).collect();
                assert!(mine.is_sorted(), "thread {t} on {day}: {mine:?}");
            }
            ids.extend(in_file);
        }
        ids.sort_unstable();
        let want: Vec<u64> = (0..8)
            .flat_map(|t| (0..50).map(move |i| t * 100 + i))
            .collect();
        assert_eq!(ids, want);
        // Dropping writes what is queued; a new writer appends to what is there.
        w.record(rec("2024-05-01T01:00:00.000Z", 999));
        drop(w);
        let w = AuditWriter::open(&dir).unwrap();
        w.record(rec("2024-05-01T02:00:00.000Z", 1000));
        w.flush();
        let text = std::fs::read_to_string(dir.join("2024-05-01.jsonl")).unwrap();
        assert_eq!(text.lines().count(), 8 * 25 + 2);
        // One chain per file, continued by the second writer.
        let crate::Verified::Ok(heads) = crate::Verified::of_dir(&dir, None).unwrap() else {
            panic!("a broken chain")
        };
        let counts: Vec<u64> = heads.iter().map(|h| h.records).collect();
        assert_eq!(counts, [8 * 25 + 2, 8 * 25]);
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    /// Writers of one directory (here two, alternating, as two processes would) continue one
    /// chain, under HMAC when keyed; files are private.
    #[test]
    fn writers_continue_the_chain_of_the_file() {
        let dir = temp_dir("chain");
        let key = AuditKey::new("k");
        let a = AuditWriter::open_keyed(&dir, Some(key.clone())).unwrap();
        let b = AuditWriter::open_keyed(&dir, Some(key.clone())).unwrap();
        for i in 0..6 {
            let w = if i % 2 == 0 { &a } else { &b };
            w.record(rec("2024-05-01T00:00:00.000Z", i));
            w.flush();
        }
        drop((a, b));
        let reopened = AuditWriter::open_keyed(&dir, Some(key.clone())).unwrap();
        reopened.record(rec("2024-05-01T00:00:01.000Z", 6));
        drop(reopened);
        let file = dir.join("2024-05-01.jsonl");
        let text = std::fs::read_to_string(&file).unwrap();
        let first = text.lines().next().unwrap();
        assert!(
            first.ends_with(&format!(
                r#""prev_hash":"{}","hash":"{}"}}"#,
                genesis(Some(&key), "2024-05-01.jsonl"),
                chain_hash(Some(&key), unseal(first).unwrap().0.as_bytes())
            )),
            "{first}"
        );
        assert!(matches!(
            crate::Verified::of_dir(&dir, Some(&key)).unwrap(),
            crate::Verified::Ok(h) if h[0].records == 7
        ));
        assert!(matches!(
            crate::Verified::of_dir(&dir, None).unwrap(),
            crate::Verified::Broken(crate::ChainBreak { line: 1, .. })
        ));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // A file whose last line is cut (a crash mid-write) gets a new line; verify points at
        // the cut one.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        f.write_all(b"{\"ts\":").unwrap();
        let w = AuditWriter::open_keyed(&dir, Some(key.clone())).unwrap();
        w.record(rec("2024-05-01T00:00:02.000Z", 7));
        drop(w);
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.lines().count(), 9);
        assert!(matches!(
            crate::Verified::of_dir(&dir, Some(&key)).unwrap(),
            crate::Verified::Broken(crate::ChainBreak { line: 8, .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
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
        w.flush();
        assert_eq!(w.failures(), 2);
        w.record(rec("2024-05-02T00:00:00.000Z", 3));
        w.flush();
        assert_eq!(w.failures(), 2);
        let text = std::fs::read_to_string(dir.join("2024-05-02.jsonl")).unwrap();
        assert_eq!(text.lines().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A stalled disk: the day's file is a FIFO nobody reads, so the writer thread blocks
    /// opening it. `record` still returns at once; past the queue's bound records are dropped
    /// and counted; once the disk moves again, the queued ones are written in order.
    #[cfg(unix)]
    #[test]
    fn a_stalled_disk_blocks_no_caller_and_bounds_the_queue() {
        use std::io::Read;
        let dir = temp_dir("stall");
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("2024-05-01.jsonl");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let record = |id| rec("2024-05-01T00:00:00.000Z", id);
        let line_len = serde_json::to_vec(&record(1)).unwrap().len() + 1;
        let w = AuditWriter::with_queue_bytes(dir.clone(), None, 3 * line_len).unwrap();
        for id in 1..=4 {
            w.record(record(id));
        }
        let dropped = w.failures();
        // Unstall the disk before asserting, so that a failed assertion cannot leave the
        // writer thread blocked forever.
        let mut reader = File::open(&fifo).unwrap();
        assert_eq!(dropped, 1, "the fourth record does not fit in the queue");
        w.flush();
        w.record(record(5));
        drop(w);
        let mut text = String::new();
        reader.read_to_string(&mut text).unwrap();
        let ids: Vec<u64> = text
            .lines()
            .map(|l| match serde_json::from_str(l).unwrap() {
                AuditRecord::ToolCall(r) => r.call_id,
                AuditRecord::Eval(_)
                | AuditRecord::Access(_)
                | AuditRecord::Sampling(_)
                | AuditRecord::Rule(_) => {
                    panic!("not a tool call")
                }
            })
            .collect();
        assert_eq!(ids, [1, 2, 3, 5]);
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
