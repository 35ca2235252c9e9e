//! The sealed store over a local directory: records, expiry, exactly-once takes and claims,
//! restarts, tampering. (The same over a real Redis: `host/tests/store`.)

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use codemode_config::DurableConfig;

use super::*;

const MINUTE: Duration = Duration::from_secs(60);

fn scratch(name: &str) -> PathBuf {
    codemode_test_support::scratch_dir("store", name)
}

fn key(byte: u8) -> StateKey {
    StateKey::from_bytes([byte; 32])
}

fn local(dir: &Path, key_byte: u8) -> Store {
    Store::local(LocalStore::open(dir, false).unwrap(), &key(key_byte))
}

/// Polls `f` until it is true, at most `tries` times 10 ms apart.
async fn eventually(tries: usize, mut f: impl AsyncFnMut() -> bool) -> bool {
    for _ in 0..tries {
        if f().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// Whether every record under `prefix` has expired in `local`'s own view, polled as
/// [`eventually`] does. That view, which a sweep reads, is the one to wait on: a [`Store`]
/// takes a record's sealed deadline before its blocking write takes the file's, so under load
/// the store can already call a record expired while its file still counts as live.
async fn expired_on_disk(local: &LocalStore, prefix: &str) -> bool {
    eventually(500, async || local.list(prefix).await.unwrap().is_empty()).await
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn put_get_take_delete() {
    let store = local(&scratch("basic"), 1);
    assert_eq!(store.get("eval:1").await.unwrap(), None);
    assert!(!store.exists("eval:1").await.unwrap());
    store.put("eval:1", b"state one", MINUTE).await.unwrap();
    assert!(store.exists("eval:1").await.unwrap());
    let record = store.get("eval:1").await.unwrap().unwrap();
    assert_eq!(
        (record.key.as_str(), &record.value[..]),
        ("eval:1", &b"state one"[..])
    );
    assert!(record.expires_at > SystemTime::now());
    assert!(record.remaining() <= MINUTE);
    // A put replaces.
    store.put("eval:1", b"state two", MINUTE).await.unwrap();
    assert_eq!(
        store.take("eval:1").await.unwrap().unwrap().value,
        b"state two"
    );
    assert_eq!(store.take("eval:1").await.unwrap(), None);
    assert_eq!(store.get("eval:1").await.unwrap(), None);
    assert!(!store.exists("eval:1").await.unwrap());
    store.put("eval:2", b"", MINUTE).await.unwrap();
    assert!(store.delete("eval:2").await.unwrap());
    assert!(!store.delete("eval:2").await.unwrap());
    let e = store.put("a/b", b"x", MINUTE).await.unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::InvalidArgument);
    let e = store.put("k", b"x", Duration::ZERO).await.unwrap_err();
    assert_eq!(
        e.message(),
        "record `k`: a time to live must be at least 1 ms, found 0ns"
    );
}

#[tokio::test]
async fn records_expire() {
    let dir = scratch("expiry");
    let store = local(&dir, 1);
    store
        .put("short", b"x", Duration::from_millis(30))
        .await
        .unwrap();
    store.put("long", b"y", MINUTE).await.unwrap();
    assert!(eventually(500, async || store.get("short").await.unwrap().is_none()).await);
    // Expired and not swept yet: the file is there, the record is not.
    assert!(dir.join("short").exists());
    assert_eq!(
        (
            store.exists("short").await.unwrap(),
            store.exists("long").await.unwrap()
        ),
        (false, true)
    );
    assert_eq!(store.take("short").await.unwrap(), None);
    let keys: Vec<String> = store
        .list("")
        .await
        .unwrap()
        .records
        .into_iter()
        .map(|r| r.key)
        .collect();
    assert_eq!(keys, ["long"]);
    // An expired record does not block a claim.
    store
        .put("claim", b"old", Duration::from_millis(20))
        .await
        .unwrap();
    assert!(eventually(500, async || store.get("claim").await.unwrap().is_none()).await);
    assert!(store.put_if_absent("claim", b"new", MINUTE).await.unwrap());
    assert!(
        !store
            .put_if_absent("claim", b"newer", MINUTE)
            .await
            .unwrap()
    );
    assert_eq!(store.get("claim").await.unwrap().unwrap().value, b"new");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_take_or_a_claim_has_exactly_one_winner() {
    let dir = scratch("race");
    // Two handles on one directory: two processes of one machine.
    let stores = [local(&dir, 1), local(&dir, 1)];
    for round in 0..20 {
        let key = format!("eval:{round}");
        stores[0].put(&key, b"saved", MINUTE).await.unwrap();
        let takers: Vec<_> = (0..16)
            .map(|i| {
                let store = stores[i % 2].clone();
                let key = key.clone();
                tokio::spawn(async move { store.take(&key).await.unwrap() })
            })
            .collect();
        let mut winners = 0;
        for t in takers {
            if let Some(record) = t.await.unwrap() {
                assert_eq!(record.value, b"saved");
                winners += 1;
            }
        }
        assert_eq!(winners, 1, "round {round}");
        let claim = format!("claim:{round}");
        let claimers: Vec<_> = (0..16)
            .map(|i| {
                let store = stores[i % 2].clone();
                let claim = claim.clone();
                tokio::spawn(async move {
                    let value = format!("node {i}");
                    let won = store.put_if_absent(&claim, value.as_bytes(), MINUTE).await;
                    (won.unwrap(), value)
                })
            })
            .collect();
        let mut won = Vec::new();
        for c in claimers {
            let (w, value) = c.await.unwrap();
            if w {
                won.push(value);
            }
        }
        assert_eq!(won.len(), 1, "round {round}");
        assert_eq!(
            stores[1].get(&claim).await.unwrap().unwrap().value,
            won[0].as_bytes()
        );
    }
    // Nothing is left behind but the claims.
    assert!(file_names(&dir).iter().all(|n| n.starts_with("claim:")));
}

#[tokio::test]
async fn a_restart_keeps_live_records_and_sweeps_expired_ones() {
    let dir = scratch("restart");
    {
        let local_store = LocalStore::open(&dir, false).unwrap();
        let store = Store::local(local_store.clone(), &key(1));
        store.put("eval:live", b"kept", MINUTE).await.unwrap();
        store
            .put("eval:gone", b"x", Duration::from_millis(20))
            .await
            .unwrap();
        assert!(
            eventually(500, async || store
                .get("eval:gone")
                .await
                .unwrap()
                .is_none())
            .await
        );
        assert!(expired_on_disk(&local_store, "eval:gone").await);
        // The file is still there until a sweep.
        assert_eq!(file_names(&dir), ["eval:gone", "eval:live"]);
        // Leftovers of a process that died mid-write and mid-take, an hour old.
        for name in [".tmp-1-0-aa", ".claimed-1-0-bb"] {
            let f = std::fs::File::create(dir.join(name)).unwrap();
            f.set_modified(SystemTime::now() - Duration::from_secs(3600))
                .unwrap();
        }
        // A fresh temporary file may belong to a write in progress: kept.
        std::fs::File::create(dir.join(".tmp-2-0-cc")).unwrap();
    }
    let reopened = LocalStore::open(&dir, true).unwrap();
    assert_eq!(file_names(&dir), [".tmp-2-0-cc", "eval:live"]);
    assert_eq!(
        reopened.sweep().unwrap(),
        Swept {
            expired: 0,
            leftovers: 0,
            kept: 1
        }
    );
    let store = Store::local(reopened, &key(1));
    assert_eq!(
        store.get("eval:live").await.unwrap().unwrap().value,
        b"kept"
    );
}

#[tokio::test]
async fn a_sweep_counts_what_it_removed() {
    let dir = scratch("sweep");
    let local_store = LocalStore::open(&dir, false).unwrap();
    let store = Store::local(local_store.clone(), &key(1));
    for i in 0..3 {
        store
            .put(&format!("x:{i}"), b"x", Duration::from_millis(5))
            .await
            .unwrap();
    }
    store.put("y", b"y", MINUTE).await.unwrap();
    assert!(
        eventually(500, async || store
            .list("x:")
            .await
            .unwrap()
            .records
            .is_empty())
        .await
    );
    assert!(expired_on_disk(&local_store, "x:").await);
    assert_eq!(
        local_store.sweep().unwrap(),
        Swept {
            expired: 3,
            leftovers: 0,
            kept: 1
        }
    );
    assert_eq!(file_names(&dir), ["y"]);
}

#[tokio::test]
async fn tampered_records_are_clear_errors_and_stay() {
    let dir = scratch("tamper");
    let store = local(&dir, 1);
    store
        .put("eval:a", b"the saved eval", MINUTE)
        .await
        .unwrap();
    let path = dir.join("eval:a");
    let original = std::fs::read(&path).unwrap();
    let opened = |reason: &str| {
        format!(
            "record `eval:a` in local store {} cannot be opened: {reason}",
            dir.display()
        )
    };

    // A flipped byte in the sealed part.
    let mut flipped = original.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    std::fs::write(&path, &flipped).unwrap();
    let e = store.get("eval:a").await.unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::Unreadable);
    assert_eq!(
        e.message(),
        opened(
            "it failed authentication: it was altered or truncated, or it belongs under another key name"
        )
    );
    assert!(path.exists(), "an unreadable record is left as it is");
    // Existence is not authentication: the header is all `exists` reads.
    assert!(store.exists("eval:a").await.unwrap());

    // Truncated: inside the sealed part, then inside the file header.
    std::fs::write(&path, &original[..original.len() - 5]).unwrap();
    assert_eq!(
        store.get("eval:a").await.unwrap_err().message(),
        opened(
            "it failed authentication: it was altered or truncated, or it belongs under another key name"
        )
    );
    std::fs::write(&path, &original[..20]).unwrap();
    assert_eq!(
        store.get("eval:a").await.unwrap_err().message(),
        opened(
            "it is 8 bytes, shorter than any sealed record (57): truncated, or not a codemode record"
        )
    );
    std::fs::write(&path, b"CMR").unwrap();
    assert_eq!(
        store.get("eval:a").await.unwrap_err().message(),
        format!(
            "record `eval:a` in local store {} is not a record file (3 bytes without the `CMR1` header)",
            dir.display()
        )
    );
    let e = store.exists("eval:a").await.unwrap_err();
    assert_eq!(
        (e.kind(), e.message()),
        (
            StoreErrorKind::Unreadable,
            format!(
                "record `eval:a` in local store {} is not a record file (no `CMR1` header)",
                dir.display()
            )
            .as_str()
        )
    );
    std::fs::write(&path, b"XXXX-not-a-record").unwrap();
    assert_eq!(
        store.exists("eval:a").await.unwrap_err().kind(),
        StoreErrorKind::Unreadable
    );

    // A record copied under another key name.
    std::fs::write(&path, &original).unwrap();
    std::fs::write(dir.join("eval:b"), &original).unwrap();
    let e = store.take("eval:b").await.unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::Unreadable);
    assert!(e.message().starts_with("record `eval:b` in local store"));
    assert!(e.message().ends_with("it belongs under another key name"));

    // A writer extending the record's life in the file header does not extend it.
    store
        .put("eval:c", b"x", Duration::from_millis(20))
        .await
        .unwrap();
    let mut extended = std::fs::read(dir.join("eval:c")).unwrap();
    extended[4..12].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(dir.join("eval:c"), &extended).unwrap();
    assert!(eventually(500, async || store.get("eval:c").await.unwrap().is_none()).await);

    // Another node's key.
    let other = local(&dir, 2);
    let e = other.get("eval:a").await.unwrap_err();
    assert_eq!(
        e.message(),
        format!(
            "record `eval:a` in local store {} cannot be opened: it was sealed under another key \
             (key id {}; this node's is {}): every node sharing a store needs the same key \
             (durable.keyEnv)",
            dir.display(),
            store.key_id(),
            other.key_id()
        )
    );
    // The owner still reads it.
    assert_eq!(
        store.get("eval:a").await.unwrap().unwrap().value,
        b"the saved eval"
    );

    // A listing reports the bad ones apart and still returns the good ones.
    std::fs::write(dir.join("eval:b"), &original).unwrap();
    let listing = store.list("eval:").await.unwrap();
    assert_eq!(
        listing
            .records
            .iter()
            .map(|r| r.key.as_str())
            .collect::<Vec<_>>(),
        ["eval:a"]
    );
    assert_eq!(listing.unreadable.len(), 1, "{:?}", listing.unreadable);
    assert!(
        listing.unreadable[0]
            .message()
            .starts_with("record `eval:b`")
    );
}

#[tokio::test]
async fn what_a_store_reader_sees() {
    let dir = scratch("reader");
    let store = local(&dir, 1);
    store
        .put("eval:x", b"{\"token\":\"hunter2-secret\"}", MINUTE)
        .await
        .unwrap();
    let raw = std::fs::read(dir.join("eval:x")).unwrap();
    assert!(!raw.windows(7).any(|w| w == b"hunter2"));
    assert_eq!(raw.len(), 12 + SEAL_OVERHEAD + 26);
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.join("eval:x")).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
}

#[tokio::test]
async fn open_from_the_config() {
    let dir = scratch("config");
    let mut config = DurableConfig::default();
    config.dir = Some(dir.join("state"));
    config.key_env = "CODEMODE_TEST_UNSET_STATE_KEY".to_string();
    let store = Store::open(&config).await.unwrap();
    assert_eq!(
        store.describe(),
        format!("local store {}", dir.join("state/records").display())
    );
    store.put("k", b"v", MINUTE).await.unwrap();
    assert_eq!(file_names(&dir.join("state")), [RECORDS_DIR, KEY_FILE]);
    // A second process on the same directory gets the same generated key.
    let again = Store::open(&config).await.unwrap();
    assert_eq!(again.key_id(), store.key_id());
    assert_eq!(again.get("k").await.unwrap().unwrap().value, b"v");

    config.dir = None;
    let e = Store::open(&config).await.unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::NoStateDir);
    assert_eq!(
        e.message(),
        "no state directory for the local store: set `durable.dir`, CODEMODE_STATE_DIR, \
         XDG_STATE_HOME or HOME"
    );
    let mut redis = DurableConfig::default();
    redis.store = codemode_config::StoreLocation::Redis(
        codemode_config::RedisUrl::parse("redis://127.0.0.1:1/0").unwrap(),
    );
    redis.key_env = "CODEMODE_TEST_UNSET_STATE_KEY".to_string();
    let e = Store::open(&redis).await.unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::SealingKey);
}
