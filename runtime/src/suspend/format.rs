//! The bytes of a saved eval (format version [`Suspended::FORMAT_VERSION`]), all integers
//! little-endian:
//!
//! ```text
//! magic "CMPARKED" (8) · format version u16 · guest sha256 (32) · crc32 of all the rest u32
//! state length u32 · state (JSON: the host's side of the eval, see SavedEval)
//! memory encoding u8 (0 raw, 1 zstd) · raw memory length u32 · memory (encoded)
//! raw memory: size u64 · run count u32 · runs (first page u32, pages u32)* · the pages'
//!             bytes XOR their fresh content, packed: a map of the 4-byte words that are
//!             not zero (one bit each), then those words
//! ```
//!
//! Version 1 differs only in the packing: 8-byte words. It is still read (a deploy keeps the
//! evals waiting in its store), and resumed as if saved now. Version 2's 4-byte words skip the
//! zero half of a guest value (a 32-bit payload and a tag, zero for an integer), which leaves
//! zstd little more than half the bytes, few enough for a fast level (measured on the
//! `suspend` bench's eval: 52 KiB in 26 µs, where version 1 took 200 µs at level 1 for 24 KiB;
//! docs/PERFORMANCE-JOURNAL.md, "Durable suspension: version 1 → version 2").
//!
//! The checksum catches corruption (a torn write, a flipped bit), not forgery: a store that
//! others can write must authenticate what it holds (the host's stores seal records with an
//! AEAD). Every length is checked before it is used, so no input makes the loader panic or
//! allocate more than the input's own size allows (plus, compressed, what a memory of the
//! eval's memory limit needs).

use std::sync::Arc;

use super::memory::{MAP_PER_PAGE, MemoryDiff, PAGE};
use super::{SavedEval, Suspended};
use crate::guest::GuestHash;

const MAGIC: &[u8; 8] = b"CMPARKED";

const HEADER: usize = 8 + 2 + 32 + 4;

const RAW: u8 = 0;
const ZSTD: u8 = 1;

/// zstd's level for the memory: a fast level (no entropy coding of literals). On the
/// `suspend` bench's eval, level 1 makes 34 KiB in 84 µs, −3 makes 52 KiB in 26 µs and
/// decompresses 5 times faster; the packing already removed what entropy coding would.
const ZSTD_LEVEL: i32 = -3;

/// Memories smaller than this are stored raw: compressing them saves too little to pay.
const COMPRESS_FROM: usize = 16 << 10;

impl Suspended {
    /// The version of the format [`Suspended::save`] writes. [`Suspended::load`] reads it and
    /// every earlier version ([`Suspended::OLDEST_FORMAT_VERSION`] on).
    pub const FORMAT_VERSION: u16 = 2;

    /// The oldest format version [`Suspended::load`] reads.
    pub const OLDEST_FORMAT_VERSION: u16 = 1;

    /// The eval as bytes: versioned ([`Self::FORMAT_VERSION`]), checksummed, naming its guest's
    /// sha256. [`Suspended::load`] reads them back, and so does a later runtime.
    pub fn save(&self) -> Vec<u8> {
        encode(self.guest, &self.state, &self.memory)
    }

    /// Reads what [`Suspended::save`] wrote.
    ///
    /// Reads every format version from [`Self::OLDEST_FORMAT_VERSION`] to
    /// [`Self::FORMAT_VERSION`]: evals saved before an upgrade resume after it.
    ///
    /// # Errors
    /// [`LoadError`] saying what is wrong: not a saved eval, a newer format version, a
    /// checksum mismatch (corrupted), truncated or malformed. Never panics, whatever `bytes`.
    pub fn load(bytes: &[u8]) -> Result<Suspended, LoadError> {
        let (guest, state, memory) = decode(bytes)?;
        state.check().map_err(LoadError::Malformed)?;
        if memory.size > state.options.memory {
            return Err(LoadError::Malformed(format!(
                "a memory of {} bytes exceeds the eval's memory limit of {} bytes",
                memory.size, state.options.memory
            )));
        }
        Ok(Suspended {
            guest,
            state: Arc::new(state),
            memory: Arc::new(memory),
            capture: None,
        })
    }
}

/// Why [`Suspended::load`] refused its bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The bytes do not start like a saved eval.
    #[error("not a saved eval (the bytes do not start with the saved-eval magic)")]
    NotASavedEval,
    /// Saved in a format version this runtime does not read (a newer one).
    #[error(
        "a saved eval of format version {found}; this runtime reads versions {} to {supported}",
        Suspended::OLDEST_FORMAT_VERSION
    )]
    Version {
        /// The version the bytes say.
        found: u16,
        /// The newest version this runtime reads.
        supported: u16,
    },
    /// The checksum does not match: the bytes were corrupted (or cut) after saving.
    #[error("the saved eval is corrupted (checksum {computed:08x}, saved as {stored:08x})")]
    Checksum {
        /// The checksum the bytes carry.
        stored: u32,
        /// The checksum of the bytes as they are.
        computed: u32,
    },
    /// The bytes end before `what`.
    #[error("the saved eval is truncated: it ends before {what} (at byte {at})")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Where it would have started.
        at: usize,
    },
    /// The checksum matches but the content does not make sense.
    #[error("the saved eval is malformed: {0}")]
    Malformed(String),
}

pub(crate) fn encode(guest: GuestHash, state: &SavedEval, memory: &MemoryDiff) -> Vec<u8> {
    let state = serde_json::to_vec(state).expect("the saved state is plain data");
    let raw_len = 12 + memory.runs.len() * 8 + memory.map.len() + memory.words.len();
    let mut raw = Vec::with_capacity(raw_len);
    raw.extend_from_slice(&memory.size.to_le_bytes());
    raw.extend_from_slice(&(memory.runs.len() as u32).to_le_bytes());
    for &(first, count) in &memory.runs {
        raw.extend_from_slice(&first.to_le_bytes());
        raw.extend_from_slice(&count.to_le_bytes());
    }
    raw.extend_from_slice(&memory.map);
    raw.extend_from_slice(&memory.words);
    let compressed = (raw.len() >= COMPRESS_FROM)
        .then(|| compress(&raw))
        .flatten()
        .filter(|c| c.len() < raw.len());

    let mut out = Vec::with_capacity(HEADER + 4 + state.len() + 5 + raw.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&Suspended::FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&guest.0);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(state.len() as u32).to_le_bytes());
    out.extend_from_slice(&state);
    out.push(if compressed.is_some() { ZSTD } else { RAW });
    out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    out.extend_from_slice(compressed.as_deref().unwrap_or(&raw));
    let crc = checksum(&out);
    out[HEADER - 4..HEADER].copy_from_slice(&crc.to_le_bytes());
    out
}

/// The CRC-32 of everything but the checksum's own four bytes (`bytes` holds a header).
fn checksum(bytes: &[u8]) -> u32 {
    let mut crc = crc32fast::Hasher::new();
    crc.update(&bytes[..HEADER - 4]);
    crc.update(&bytes[HEADER..]);
    crc.finalize()
}

pub(crate) fn decode(bytes: &[u8]) -> Result<(GuestHash, SavedEval, MemoryDiff), LoadError> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(LoadError::NotASavedEval);
    }
    let mut r = Reader::new(bytes, MAGIC.len());
    let version = u16::from_le_bytes(r.array("the format version")?);
    if !(Suspended::OLDEST_FORMAT_VERSION..=Suspended::FORMAT_VERSION).contains(&version) {
        return Err(LoadError::Version {
            found: version,
            supported: Suspended::FORMAT_VERSION,
        });
    }
    let guest = GuestHash(r.array("the guest's hash")?);
    let stored = u32::from_le_bytes(r.array("the checksum")?);
    let computed = checksum(bytes);
    if stored != computed {
        return Err(LoadError::Checksum { stored, computed });
    }
    let state_len = r.u32("the state's length")?;
    let state = r.take(state_len as usize, "the state")?;
    let state: SavedEval = serde_json::from_slice(state)
        .map_err(|e| LoadError::Malformed(format!("the state does not read: {e}")))?;
    let encoding = r.array::<1>("the memory's encoding")?[0];
    let raw_len = u64::from(r.u32("the memory's length")?);
    let largest = largest_section(state.options.memory);
    if raw_len > largest {
        return Err(LoadError::Malformed(format!(
            "a memory section of {raw_len} bytes exceeds the {largest} bytes a memory within \
             the eval's limit ({} bytes) can need",
            state.options.memory
        )));
    }
    let encoded = r.rest();
    let raw = match encoding {
        RAW => std::borrow::Cow::Borrowed(encoded),
        ZSTD => std::borrow::Cow::Owned(inflate(encoded, raw_len)?),
        other => {
            return Err(LoadError::Malformed(format!(
                "unknown memory encoding {other}"
            )));
        }
    };
    if raw.len() as u64 != raw_len {
        return Err(LoadError::Malformed(format!(
            "the memory section holds {} bytes, its header says {raw_len}",
            raw.len()
        )));
    }
    let memory = memory_section(&raw, version)?;
    Ok((guest, state, memory))
}

/// The largest raw memory section of a memory of at most `limit` bytes (at most 4 GiB): its
/// header, a run per page, a map bit per 4-byte word (version 1: per 8-byte word) and every
/// word.
fn largest_section(limit: u64) -> u64 {
    let size = limit.min(crate::RuntimeConfig::MAX_MEMORY_LIMIT);
    let pages = size.div_ceil(PAGE as u64);
    12 + pages * 8 + pages * MAP_PER_PAGE as u64 + size
}

/// `raw` compressed with zstd, by a compressor kept per thread (making one costs more than
/// compressing a small memory); `None` if zstd fails.
fn compress(raw: &[u8]) -> Option<Vec<u8>> {
    thread_local! {
        static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    COMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = zstd::bulk::Compressor::new(ZSTD_LEVEL).ok();
        }
        cell.as_mut()?.compress(raw).ok()
    })
}

/// Decompresses at most `len` bytes (more is an error), by a decompressor kept per thread.
/// `len` was checked against what the eval's memory limit allows.
fn inflate(encoded: &[u8], len: u64) -> Result<Vec<u8>, LoadError> {
    thread_local! {
        static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    let failed =
        |e: std::io::Error| LoadError::Malformed(format!("the memory does not decompress: {e}"));
    if let Ok(Some(holds)) = zstd::zstd_safe::get_frame_content_size(encoded)
        && holds != len
    {
        return Err(LoadError::Malformed(format!(
            "the memory section holds {holds} bytes, its header says {len}"
        )));
    }
    DECOMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = Some(zstd::bulk::Decompressor::new().map_err(failed)?);
        }
        let decompressor = cell.as_mut().expect("made above");
        // One byte more than stated: a section that holds more is told apart from one that
        // holds exactly `len`.
        let capacity = usize::try_from(len + 1).unwrap_or(usize::MAX);
        decompressor.decompress(encoded, capacity).map_err(failed)
    })
}

fn memory_section(raw: &[u8], version: u16) -> Result<MemoryDiff, LoadError> {
    let mut r = Reader::new(raw, 0);
    let size = u64::from_le_bytes(r.array("the memory's size")?);
    let count = r.u32("the number of runs")? as usize;
    let table = r.take(
        count.checked_mul(8).ok_or(LoadError::Truncated {
            what: "the runs",
            at: r.at,
        })?,
        "the runs",
    )?;
    let runs: Vec<(u32, u32)> = table
        .chunks_exact(8)
        .map(|run| {
            let (first, pages) = run.split_at(4);
            (
                u32::from_le_bytes(first.try_into().expect("4 bytes")),
                u32::from_le_bytes(pages.try_into().expect("4 bytes")),
            )
        })
        .collect();
    let mut memory = MemoryDiff {
        size,
        runs,
        map: Vec::new(),
        words: Vec::new(),
    };
    let pages = memory.check_runs().map_err(LoadError::Malformed)?;
    if version == 1 {
        let data = MemoryDiff::unpack_v1(r.rest(), pages).map_err(LoadError::Malformed)?;
        return Ok(MemoryDiff::from_xored(size, memory.runs, &data));
    }
    (memory.map, memory.words) =
        MemoryDiff::unpack(r.rest(), pages).map_err(LoadError::Malformed)?;
    Ok(memory)
}

/// Reads a byte slice front to back, every read bounds-checked.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], at: usize) -> Self {
        Reader { bytes, at }
    }

    fn take(&mut self, len: usize, what: &'static str) -> Result<&'a [u8], LoadError> {
        let end = self
            .at
            .checked_add(len)
            .filter(|&end| end <= self.bytes.len())
            .ok_or(LoadError::Truncated { what, at: self.at })?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], LoadError> {
        Ok(self.take(N, what)?.try_into().expect("N bytes"))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, LoadError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn rest(&mut self) -> &'a [u8] {
        let rest = &self.bytes[self.at..];
        self.at = self.bytes.len();
        rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suspend::{PendingCall, SavedOptions};
    use crate::{EvalId, EvalOptions};
    use std::time::Duration;

    fn state() -> SavedEval {
        SavedEval {
            eval_id: EvalId(7),
            options: SavedOptions::of(&EvalOptions::default()),
            fuel_left: Some(5),
            clock_spent: Duration::from_millis(3),
            wall_before: Duration::from_millis(4),
            parked_at_ms: 1,
            next_call_id: 2,
            output_used: 0,
            closed_stdio: 0,
            memory_peak: 1 << 16,
            logs: Vec::new(),
            ledger: Vec::new(),
            call_sites: Vec::new(),
            call_elapsed: Vec::new(),
            call_warnings: Vec::new(),
            pending: vec![PendingCall {
                call_id: 1,
                name: "ask".into(),
                args: serde_json::json!({}),
                line: None,
                column: None,
                note: None,
            }],
        }
    }

    /// Small memories are stored raw, large compressible ones with zstd; both read back.
    #[test]
    fn memory_is_compressed_only_when_large_enough_and_both_read_back() {
        let guest = GuestHash([9; 32]);
        for (pages, encoding) in [(1u32, RAW), (8, ZSTD)] {
            let data = vec![3; pages as usize * PAGE];
            let memory = MemoryDiff::from_xored(1 << 16, vec![(2, pages)], &data);
            let bytes = encode(guest, &state(), &memory);
            let state_len = u32::from_le_bytes(bytes[HEADER..HEADER + 4].try_into().unwrap());
            assert_eq!(
                bytes[HEADER + 4 + state_len as usize],
                encoding,
                "{pages} pages"
            );
            let (read_guest, read_state, read_memory) = decode(&bytes).unwrap();
            assert_eq!(
                (read_guest, read_state, read_memory),
                (guest, state(), memory)
            );
        }
    }

    #[test]
    fn a_memory_section_that_decompresses_past_its_stated_length_is_refused() {
        let memory = MemoryDiff::from_xored(1 << 16, vec![(0, 8)], &[3; 8 * PAGE]);
        let mut bytes = encode(GuestHash([1; 32]), &state(), &memory);
        let state_len = u32::from_le_bytes(bytes[HEADER..HEADER + 4].try_into().unwrap()) as usize;
        let len_at = HEADER + 4 + state_len + 1;
        bytes[len_at..len_at + 4].copy_from_slice(&100u32.to_le_bytes());
        let crc = checksum(&bytes);
        bytes[HEADER - 4..HEADER].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(
            decode(&bytes).unwrap_err(),
            LoadError::Malformed(format!(
                "the memory section holds {} bytes, its header says 100",
                12 + 8 + 8 * MAP_PER_PAGE + 8 * PAGE
            ))
        );
    }

    /// Answers every call with what its arguments ask to be told (`{"say": …}`).
    struct Sayer;

    impl crate::ToolHost for Sayer {
        fn call<'a>(
            &'a self,
            _name: &'a str,
            args: serde_json::Value,
            _cx: &'a crate::CallContext,
        ) -> crate::BoxFuture<'a, Result<serde_json::Value, crate::ToolError>> {
            Box::pin(async move { Ok(args["say"].clone()) })
        }

        fn tool_names(&self) -> Vec<String> {
            vec!["ask".into()]
        }
    }

    /// A deploy keeps the evals waiting in its store: one saved by the version-1 code (in
    /// `fixtures/v1.bin`) loads, resumes to the right end in a runtime given the guest it was
    /// saved with (`fixtures/v1-guest.wasm.zst`, the committed guest of that time), and saved
    /// again is version 2.
    #[test]
    fn an_eval_saved_in_version_1_loads_and_resumes() {
        use crate::{EvalControl, Runtime, RuntimeConfig, Suspended};
        use serde_json::json;

        let v1 = include_bytes!("fixtures/v1.bin");
        assert_eq!(u16::from_le_bytes([v1[8], v1[9]]), 1);
        let v1_guest = zstd::decode_all(&include_bytes!("fixtures/v1-guest.wasm.zst")[..]).unwrap();
        let runtime = Runtime::new(&RuntimeConfig::default()).unwrap();
        let v1_guest = runtime.add_guest(&v1_guest).unwrap();
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let loaded = Suspended::load(v1).unwrap();
        assert_eq!(
            loaded.guest_hash().to_string(),
            "9f55ad0fa933a8cc91f1e4f849fb9c6a6ccf25fc495472483ed6efcb113bd148"
        );
        assert_eq!(loaded.guest_hash(), v1_guest);
        assert_eq!(
            runtime.guests(),
            vec![GuestHash::of(Runtime::GUEST_WASM), v1_guest]
        );
        assert_eq!(loaded.eval_id(), EvalId(42));
        assert_eq!(
            loaded.pending(),
            [PendingCall {
                call_id: 1,
                name: "ask".into(),
                args: json!({"question": "go on?"}),
                line: Some(3),
                column: Some(31),
                note: Some(json!({"approval": 1})),
            }]
        );
        assert_eq!(loaded.logs()[0].message, "built 1000");

        let again = loaded.save();
        assert_eq!(
            u16::from_le_bytes([again[8], again[9]]),
            Suspended::FORMAT_VERSION
        );
        let reloaded = Suspended::load(&again).unwrap();
        assert_eq!(
            (&reloaded.memory, &reloaded.state),
            (&loaded.memory, &loaded.state)
        );

        // 3 × (0 + 1 + … + 999) = 1,498,500, plus the answer.
        for (suspended, answer) in [(&loaded, 7), (&reloaded, 8)] {
            let step = tokio.block_on(runtime.resume(
                suspended,
                vec![(1, Ok(json!(answer)))],
                &Sayer,
                &EvalControl::new(),
            ));
            let outcome = step.unwrap().finished().unwrap();
            assert!(outcome.ok, "{:?}", outcome.error);
            assert_eq!(outcome.result, json!(1_498_500 + answer));
            assert_eq!(outcome.logs.len(), 1);
            assert_eq!(outcome.tool_calls.len(), 1);
        }
    }
}
