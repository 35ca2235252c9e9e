//! `codemode bench --redis URL`: what the durable store adds to parking an eval (`put`) and to
//! resuming it (`take`), on the local store and on Redis, for the record a typical parked eval
//! saves (the bytes of a real `Suspended::save` of the bench's PARK workload, sealed as the
//! server seals them).
//!
//! It lives in the host because the stores do (the bench crate is below the host). Issue 18's
//! target: resuming through Redis on loopback adds at most 1 ms p50 over resuming from the local
//! store. The local store is measured without fsync (the `suspend` section's save target) and,
//! for `put`, with it (the default config).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_bench::{self as bench, Figure, Samples};
use codemode_config::RedisUrl;

use codemode_store::{LocalStore, RedisStore, StateKey, Store};

/// The most resuming through Redis may add over resuming from the local store, p50.
pub const RESUME_TARGET_MS: f64 = 1.0;
/// Rounds of `put` then `take` per store (a tenth with `--quick`), after [`WARMUP`] more.
pub const SAMPLES: usize = 1000;
/// Unmeasured rounds first (connections, page cache, allocator).
const WARMUP: usize = 20;
/// The records' time to live: longer than any run; `take` removes each one anyway.
const TTL: Duration = Duration::from_secs(600);
/// The `suspend` section's name, which these figures join.
const SECTION: &str = "suspend";

/// What one store did, in µs per operation.
struct PutTake {
    put: Samples,
    take: Samples,
}

/// Connects to `redis`, then measures `samples` rounds of `put` then `take` of a typical saved
/// eval on a local store (in a new directory under the system's temporary directory, removed
/// after) and on Redis; the figures join the `suspend` section.
///
/// # Errors
///
/// A message naming the URL (without its password) when Redis cannot be reached, or naming
/// the operation that failed.
pub fn measure(redis: &RedisUrl, samples: usize) -> Result<Vec<Figure>, String> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting a tokio runtime: {e}"))?;
    tokio.block_on(async {
        let remote = RedisStore::connect(redis)
            .await
            .map_err(|e| format!("--redis: {e}"))?;
        let payload = typical_saved_eval().await?;
        let key = StateKey::generate().map_err(|e| e.to_string())?;
        let dir = TempDir::new()?;
        let plain = LocalStore::open(dir.0.join("plain"), false).map_err(|e| e.to_string())?;
        let synced = LocalStore::open(dir.0.join("fsync"), true).map_err(|e| e.to_string())?;
        let stores = [
            Store::local(plain, &key),
            Store::local(synced, &key),
            Store::new(Arc::new(remote), &key),
        ];
        let [local, local_fsync, remote] = put_take(&stores, &payload, samples).await?;
        Ok(figures(&local, &local_fsync, &remote, payload.len()))
    })
}

/// The bytes `Suspended::save` writes for the bench's PARK workload.
async fn typical_saved_eval() -> Result<Vec<u8>, String> {
    let runtime = codemode_runtime::Runtime::new(&bench::suspension_config(1))
        .map_err(|e| format!("starting the runtime: {e}"))?;
    Ok(bench::park_typical(&runtime).await.save())
}

/// `put` then `take` of `payload` on each store in turn, `samples` rounds after [`WARMUP`]
/// (interleaved, so that the machine's spells and warming up fall on every store alike), each
/// record under its own key (as each parked eval has).
async fn put_take<const N: usize>(
    stores: &[Store; N],
    payload: &[u8],
    samples: usize,
) -> Result<[PutTake; N], String> {
    let mut times: [(Vec<Duration>, Vec<Duration>); N] =
        std::array::from_fn(|_| (Vec::with_capacity(samples), Vec::with_capacity(samples)));
    for round in 0..WARMUP + samples {
        for (store, (put, take)) in stores.iter().zip(&mut times) {
            let fail = |what: &str, e: &dyn std::fmt::Display| {
                format!("{}: {what}: {e}", store.describe())
            };
            let key = format!("bench-store:{}-{round}", std::process::id());
            let started = Instant::now();
            store
                .put(&key, payload, TTL)
                .await
                .map_err(|e| fail("put", &e))?;
            let stored = started.elapsed();
            let started = Instant::now();
            let record = store.take(&key).await.map_err(|e| fail("take", &e))?;
            let taken = started.elapsed();
            match record {
                Some(record) if record.value == payload => {}
                Some(_) => return Err(fail("take", &"returned other bytes than were put")),
                None => return Err(fail("take", &"found nothing where a record was put")),
            }
            if round >= WARMUP {
                put.push(stored);
                take.push(taken);
            }
        }
    }
    Ok(times.map(|(put, take)| PutTake {
        put: Samples::micros(&put),
        take: Samples::micros(&take),
    }))
}

fn figures(local: &PutTake, local_fsync: &PutTake, redis: &PutTake, size: usize) -> Vec<Figure> {
    let record = format!("{:.1} KiB saved eval, sealed", size as f64 / 1024.0);
    let latency = |name: String, s: &Samples| Figure {
        section: SECTION.into(),
        name,
        value: s.median(),
        unit: "µs".into(),
        p99: Some(s.percentile(99.0)),
        target: None,
        met: None,
        native: None,
        ratio: None,
        note: None,
    };
    let added = |remote: &Samples, local: &Samples| remote.median() - local.median();
    let resume_added = added(&redis.take, &local.take);
    let target = format!(
        "≤ {} µs ({RESUME_TARGET_MS} ms) over local",
        RESUME_TARGET_MS * 1e3
    );
    vec![
        latency(format!("store put (park), local, {record}"), &local.put),
        latency(
            format!("store put (park), local with fsync, {record}"),
            &local_fsync.put,
        ),
        latency(format!("store take (resume), local, {record}"), &local.take),
        latency(format!("store put (park), Redis, {record}"), &redis.put),
        latency(format!("store take (resume), Redis, {record}"), &redis.take),
        Figure {
            value: resume_added,
            p99: None,
            target: Some(target),
            met: Some(resume_added <= RESUME_TARGET_MS * 1e3),
            note: Some(format!(
                "p50 take through Redis − p50 take from the local store (no fsync); put adds \
                 {:.1} µs; {} rounds of put then take per store, each record under its own key",
                added(&redis.put, &local.put),
                redis.take.len()
            )),
            ..latency(
                "resume through Redis: added over the local store".into(),
                &redis.take,
            )
        },
    ]
}

/// What the bench says when `--redis` was not given and the `suspend` section runs.
pub const NOT_MEASURED: &str = "resume through Redis (target ≤ 1 ms p50 over the local store) \
     is not measured without a server: start one (`redis-server --port 6390 --save '' \
     --appendonly no`) and pass `--redis redis://127.0.0.1:6390/0`";

/// A new directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, String> {
        let path = std::env::temp_dir().join(format!(
            "codemode-bench-store-{}-{}",
            std::process::id(),
            codemode_store::now_ms()
        ));
        std::fs::create_dir(&path).map_err(|e| format!("creating {}: {e}", path.display()))?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_redis_is_a_clear_error_naming_the_url() {
        // Port 1 on loopback: nothing listens there, so the connection is refused at once.
        let url = RedisUrl::parse("redis://127.0.0.1:1/0").unwrap();
        let error = measure(&url, 1).unwrap_err();
        assert_eq!(
            error,
            "--redis: redis://127.0.0.1:1/0: cannot connect: Connection refused (os error 111)"
        );
    }
}
