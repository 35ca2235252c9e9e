//! The bytes of a saved eval (format version [`FORMAT_VERSION`]), all integers little-endian:
//!
//! ```text
//! magic "CMPARKED" (8) · format version u16 · guest sha256 (32) · crc32 of all the rest u32
//! state length u32 · state (JSON: the host's side of the eval, see SavedEval)
//! memory encoding u8 (0 raw, 1 zstd) · raw memory length u32 · memory (encoded)
//! raw memory: size u64 · run count u32 · runs (first page u32, pages u32)* · the pages'
//!             bytes XOR their fresh content, packed: a bitmap of the 8-byte words that are
//!             not zero (one bit each), then those words
//! ```
//!
//! The checksum catches corruption (a torn write, a flipped bit), not forgery: a store that
//! others can write must authenticate what it holds (the host's stores seal records with an
//! AEAD). Every length is checked before it is used, so no input makes the loader panic or
//! allocate more than the input's own size allows (plus, compressed, the memory limit).

use super::memory::MemoryDiff;
use super::{LoadError, SavedEval};
use crate::guest::GuestHash;

const MAGIC: &[u8; 8] = b"CMPARKED";

/// The version of the format [`crate::Suspended::save`] writes and the only one
/// [`crate::Suspended::load`] reads.
pub const FORMAT_VERSION: u16 = 1;

const HEADER: usize = 8 + 2 + 32 + 4;

const RAW: u8 = 0;
const ZSTD: u8 = 1;

/// zstd's level for the memory: its fastest standard level (higher ones cost several times
/// the time for a few percent; measured on the `suspend` bench's eval).
const ZSTD_LEVEL: i32 = 1;

/// Memories smaller than this are stored raw: compressing them saves too little to pay.
const COMPRESS_FROM: usize = 16 << 10;

/// The largest raw memory section a load accepts: a 4 GiB memory, its run table and header.
const MAX_RAW_MEMORY: u64 = (4 << 30) + (1 << 24);

pub(crate) fn encode(guest: GuestHash, state: &SavedEval, memory: &MemoryDiff) -> Vec<u8> {
    let state = serde_json::to_vec(state).expect("the saved state is plain data");
    let mut raw = Vec::with_capacity(12 + memory.runs.len() * 8 + memory.data.len());
    raw.extend_from_slice(&memory.size.to_le_bytes());
    raw.extend_from_slice(&(memory.runs.len() as u32).to_le_bytes());
    for &(first, count) in &memory.runs {
        raw.extend_from_slice(&first.to_le_bytes());
        raw.extend_from_slice(&count.to_le_bytes());
    }
    raw.extend_from_slice(&memory.packed_data());
    let compressed = (raw.len() >= COMPRESS_FROM)
        .then(|| compress(&raw))
        .flatten()
        .filter(|c| c.len() < raw.len());

    let mut out = Vec::with_capacity(HEADER + 4 + state.len() + 5 + raw.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
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
    if version != FORMAT_VERSION {
        return Err(LoadError::Version {
            found: version,
            supported: FORMAT_VERSION,
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
    if raw_len > MAX_RAW_MEMORY {
        return Err(LoadError::Malformed(format!(
            "a memory section of {raw_len} bytes exceeds the largest memory"
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
    let memory = memory_section(&raw)?;
    Ok((guest, state, memory))
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

/// Decompresses at most `len` bytes (more is an error): the output grows with what the input
/// really holds, not with what its header claims.
fn inflate(encoded: &[u8], len: u64) -> Result<Vec<u8>, LoadError> {
    use std::io::Read;
    let decoder = zstd::stream::read::Decoder::with_buffer(encoded)
        .map_err(|e| LoadError::Malformed(format!("the memory does not decompress: {e}")))?;
    let mut out = Vec::new();
    decoder
        .take(len + 1)
        .read_to_end(&mut out)
        .map_err(|e| LoadError::Malformed(format!("the memory does not decompress: {e}")))?;
    Ok(out)
}

fn memory_section(raw: &[u8]) -> Result<MemoryDiff, LoadError> {
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
    let runs = table
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
        data: Vec::new(),
    };
    let pages = memory.check_runs().map_err(LoadError::Malformed)?;
    memory.data = MemoryDiff::unpack_data(r.rest(), pages).map_err(LoadError::Malformed)?;
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
            let memory = MemoryDiff {
                size: 1 << 16,
                runs: vec![(2, pages)],
                data: vec![3; pages as usize * super::super::memory::PAGE],
            };
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
        let memory = MemoryDiff {
            size: 1 << 16,
            runs: vec![(0, 8)],
            data: vec![3; 8 * super::super::memory::PAGE],
        };
        let mut bytes = encode(GuestHash([1; 32]), &state(), &memory);
        let state_len = u32::from_le_bytes(bytes[HEADER..HEADER + 4].try_into().unwrap()) as usize;
        let len_at = HEADER + 4 + state_len + 1;
        bytes[len_at..len_at + 4].copy_from_slice(&100u32.to_le_bytes());
        let crc = checksum(&bytes);
        bytes[HEADER - 4..HEADER].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(
            decode(&bytes).unwrap_err(),
            LoadError::Malformed("the memory section holds 101 bytes, its header says 100".into())
        );
    }
}
