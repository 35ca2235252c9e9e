//! Target (issue 18): resuming through Redis on loopback adds ≤ 1 ms p50 over the local store.
//!
//! Measures, for a 64 KiB sealed record (incompressible bytes, about a saved eval's size), the
//! p50/p99 of `put`, of `take` (what a resume does) and of `put` + `take`, through
//! [`Store`](codemode_store::Store) — sealing included — over the local store with and
//! without fsync (in the target directory, on the build's disk) and over a real `redis-server`
//! on 127.0.0.1 (started here; Debian's package, installed when missing).
//!
//! Then what looking up a parked eval costs: `get` of its 64 KiB record (read and unseal it
//! whole: how `Durable::is_parked`, `knows` and the owner check used to look), against `exists`
//! of it (`is_parked` now) and `get` of a small sealed owner record (`knows` and the owner
//! check now).
//!
//! `cargo bench -p codemode-host --bench store` (`STORE_BENCH_ITERS`, default 2000).
#![expect(
    clippy::print_stderr,
    reason = "a benchmark reports its figures on stderr"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_config::RedisUrl;
use codemode_store::{LocalStore, RedisStore, StateKey, Store};
use codemode_test_support::services::RedisServer;

const RECORD: usize = 64 * 1024;
const TTL: Duration = Duration::from_secs(600);

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The p50s of put, take and put + take for `store`, printed and returned.
async fn measure(name: &str, store: &Store, payload: &[u8], iters: usize) -> [Duration; 3] {
    for i in 0..iters.min(200) {
        let key = format!("warm:{i}");
        store.put(&key, payload, TTL).await.expect("put");
        store.take(&key).await.expect("take").expect("record");
    }
    let (mut puts, mut takes, mut both) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..iters {
        let key = format!("eval:{i}");
        let start = Instant::now();
        store.put(&key, payload, TTL).await.expect("put");
        let put = start.elapsed();
        let start = Instant::now();
        let record = store.take(&key).await.expect("take").expect("record");
        let take = start.elapsed();
        assert_eq!(record.value.len(), payload.len());
        puts.push(put);
        takes.push(take);
        both.push(put + take);
    }
    let mut p50s = [Duration::ZERO; 3];
    for (j, (what, samples)) in [
        ("put", &mut puts),
        ("take", &mut takes),
        ("put+take", &mut both),
    ]
    .into_iter()
    .enumerate()
    {
        samples.sort();
        p50s[j] = percentile(samples, 0.5);
        eprintln!(
            "store: {name:<18} {what:<9} p50 {:>8.1} µs  p99 {:>8.1} µs",
            micros(p50s[j]),
            micros(percentile(samples, 0.99)),
        );
    }
    p50s
}

/// The p50 of looking up a parked eval in `store`, each way (see the module docs), printed.
async fn lookups(name: &str, store: &Store, payload: &[u8], iters: usize) {
    let owner = br#"{"tool":"codemode_eval_gate","caller":"alice@example.com"}"#;
    store.put("eval:lookup", payload, TTL).await.expect("put");
    store.put("owner:lookup", owner, TTL).await.expect("put");
    let mut ways: [(&str, Vec<Duration>); 3] = [
        ("get eval: (64 KiB)", Vec::new()),
        ("exists eval:", Vec::new()),
        ("get owner:", Vec::new()),
    ];
    for round in 0..iters.min(200) + iters {
        for (way, samples) in ways.iter_mut() {
            let start = Instant::now();
            let found = match *way {
                "exists eval:" => store.exists("eval:lookup").await.expect("exists"),
                "get owner:" => store.get("owner:lookup").await.expect("get").is_some(),
                _ => store.get("eval:lookup").await.expect("get").is_some(),
            };
            let took = start.elapsed();
            assert!(found);
            if round >= iters.min(200) {
                samples.push(took);
            }
        }
    }
    for (way, samples) in &mut ways {
        samples.sort();
        eprintln!(
            "store: {name:<18} lookup {way:<19} p50 {:>8.1} µs  p99 {:>8.1} µs",
            micros(percentile(samples, 0.5)),
            micros(percentile(samples, 0.99)),
        );
    }
    store.delete("eval:lookup").await.expect("delete");
    store.delete("owner:lookup").await.expect("delete");
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument selects nothing here.
    let iters: usize = std::env::var("STORE_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio");
    // xorshift: incompressible bytes, like a compressed saved eval.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let payload: Vec<u8> = (0..RECORD)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let key = StateKey::from_bytes([7; 32]);
    let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("store-bench");
    let _ = std::fs::remove_dir_all(&base);
    let redis = RedisServer::start(&base.join("redis"));
    tokio.block_on(async {
        let fsync = Store::local(
            LocalStore::open(base.join("fsync"), true).expect("local store"),
            &key,
        );
        let no_fsync = Store::local(
            LocalStore::open(base.join("no-fsync"), false).expect("local store"),
            &key,
        );
        let url = RedisUrl::parse(&redis.url(0)).expect("url");
        let remote = Store::new(
            Arc::new(RedisStore::connect(&url).await.expect("redis")),
            &key,
        );
        eprintln!("store: {iters} records of {} KiB each", RECORD / 1024);
        let local = measure("local, fsync", &fsync, &payload, iters).await;
        let local_fast = measure("local, no fsync", &no_fsync, &payload, iters).await;
        let redis = measure("redis (loopback)", &remote, &payload, iters).await;
        lookups("local", &no_fsync, &payload, iters).await;
        lookups("redis (loopback)", &remote, &payload, iters).await;
        for (what, i) in [("take (resume)", 1), ("put+take", 2)] {
            eprintln!(
                "store: redis adds {:+.1} µs p50 to {what} over local with fsync, {:+.1} µs over \
                 local without (target ≤ +1000 µs)",
                micros(redis[i]) - micros(local[i]),
                micros(redis[i]) - micros(local_fast[i]),
            );
        }
    });
}
