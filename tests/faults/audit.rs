//! The audit directory full (a 64 KiB tmpfs filled up before the server starts; the tests run
//! as root, as in CI's container): evals go on — the audit never fails a caller — each record
//! that cannot be written is counted, and the count the server reports is the number of
//! records lost.

use std::path::Path;
use std::process::Command;

use codemode_bench::http::Protocol;
use serde_json::json;

use crate::harness::{World, eval};

/// A tmpfs mounted at `dir`, unmounted on drop.
struct Tmpfs<'a>(&'a Path);

impl<'a> Tmpfs<'a> {
    fn mount(dir: &'a Path, size: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .expect("run mount");
        assert!(
            status.success(),
            "mount a tmpfs at {} (the fault tests run as root): {status}",
            dir.display()
        );
        Tmpfs(dir)
    }
}

impl Drop for Tmpfs<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0).status();
    }
}

#[test]
fn a_full_audit_disk_loses_records_counted_and_evals_go_on() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("faults/audit_full_mount");
    let _ = Command::new("umount").arg(&dir).status();
    let _tmpfs = Tmpfs::mount(&dir, "64k");
    // Fill it: every block taken.
    let filler = std::fs::write(dir.join("filler"), vec![0u8; 128 * 1024]);
    assert!(filler.is_err(), "64 KiB cannot hold 128 KiB");
    let audit = dir.clone();
    let mut world = World::start("audit_full", move |_| json!({"audit": {"dir": audit}}));
    let tokio = tokio::runtime::Runtime::new().unwrap();
    const EVALS: usize = 20;
    for i in 0..EVALS {
        let protocol = if i % 2 == 0 {
            Protocol::Stateless
        } else {
            Protocol::Legacy
        };
        let outcome = tokio
            .block_on(eval(&world.server.url, protocol, &format!("return {i}")))
            .unwrap();
        assert_eq!(
            (&outcome["ok"], &outcome["result"]),
            (&json!(true), &json!(i))
        );
    }
    // A clean exit flushes the queue: every record has been tried (and lost) by then.
    let (status, _) = world
        .server
        .terminate(std::time::Duration::from_secs(30))
        .unwrap();
    assert!(status.success(), "{status}");
    let log = strip_ansi(&world.server.log_tail());
    let counts: Vec<u64> = log
        .lines()
        .filter(|l| l.contains("cannot write an audit record"))
        .filter_map(|l| {
            l.split("failures=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert_eq!(
        counts.last().copied(),
        Some(EVALS as u64),
        "one eval record lost per eval, each counted:\n{log}"
    );
    // The counter only grows, one by one.
    assert_eq!(counts, (1..=EVALS as u64).collect::<Vec<_>>(), "{log}");
}

/// `text` without ANSI colour sequences (`ESC [ … m`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
