//! A parked sandbox's linear memory as the pages that differ from its guest's fresh memory.
//!
//! The fresh memory is what a new instance starts with: the snapshot image, then zeros where
//! the memory grew. A page that differs is kept as its XOR with the fresh page, so the bytes a
//! script did not change are zeros — a heap page where a few objects changed, or the 12 zero
//! bytes of every 16-byte integer value, compress to almost nothing (measured: the 304 KiB of
//! pages a 10,000-element array dirties become 70 KiB with zstd level 1 alone, 29 KiB XORed
//! first, 24 KiB XORed and packed; docs/PERFORMANCE.md).
//! A restore is: instantiate, grow to the saved size, XOR the saved pages in. Pages are 4 KiB
//! (the host's page, not wasm's 64 KiB): a script dirties scattered small pieces of the heap.

use std::ops::Range;

/// Granularity of the difference.
pub(crate) const PAGE: usize = 4096;

/// The pages of a memory that differ from its image (or, past the image's end, from zero).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemoryDiff {
    /// The memory's size in bytes (a multiple of wasm's 64 KiB page).
    pub(crate) size: u64,
    /// Runs of consecutive saved pages: (first page, number of pages), ascending, disjoint.
    pub(crate) runs: Vec<(u32, u32)>,
    /// The saved pages' bytes XOR the fresh memory's, run after run.
    pub(crate) data: Vec<u8>,
}

impl MemoryDiff {
    /// The pages of `memory` that differ from `image` (those past `image`'s end: that are
    /// not all zeros), each XOR its fresh page.
    pub(crate) fn capture(memory: &[u8], image: &[u8]) -> Self {
        let mut runs: Vec<(u32, u32)> = Vec::new();
        let mut data = Vec::new();
        for (index, page) in memory.chunks(PAGE).enumerate() {
            let start = index * PAGE;
            let fresh = image.get(start..start + page.len());
            let same = match fresh {
                Some(fresh) => page == fresh,
                None => is_zero(page),
            };
            if same {
                continue;
            }
            let index = index as u32;
            match runs.last_mut() {
                Some((first, count)) if *first + *count == index => *count += 1,
                _ => runs.push((index, 1)),
            }
            let at = data.len();
            data.extend_from_slice(page);
            if let Some(fresh) = fresh {
                xor(&mut data[at..], fresh);
            }
        }
        MemoryDiff {
            size: memory.len() as u64,
            runs,
            data,
        }
    }

    /// [`MemoryDiff::data`] packed: a bitmap with one bit per 8-byte word (set: not zero),
    /// then the words that are not zero. The XOR of a page with its fresh content is mostly
    /// zero words, so this makes what zstd then compresses several times smaller (and zstd
    /// as many times faster, both ways).
    pub(crate) fn packed_data(&self) -> Vec<u8> {
        let words = self.data.as_chunks::<8>().0;
        let mut bitmap = vec![0u8; words.len().div_ceil(8)];
        let mut kept = Vec::with_capacity(self.data.len() / 4);
        for (i, word) in words.iter().enumerate() {
            if u64::from_ne_bytes(*word) != 0 {
                bitmap[i / 8] |= 1 << (i % 8);
                kept.extend_from_slice(word);
            }
        }
        bitmap.extend_from_slice(&kept);
        bitmap
    }

    /// The data of `pages` pages from what [`MemoryDiff::packed_data`] wrote.
    pub(crate) fn unpack_data(packed: &[u8], pages: usize) -> Result<Vec<u8>, String> {
        let words = pages * (PAGE / 8);
        let (bitmap, kept) = packed
            .split_at_checked(words / 8)
            .ok_or("the memory's word map is cut short")?;
        let ones: usize = bitmap.iter().map(|b| b.count_ones() as usize).sum();
        if kept.len() != ones * 8 {
            return Err(format!(
                "the memory's word map names {ones} words, {} bytes follow",
                kept.len()
            ));
        }
        let mut data = vec![0u8; pages * PAGE];
        let mut next = kept.as_chunks::<8>().0.iter();
        for (byte, bits) in bitmap.iter().enumerate() {
            let mut bits = *bits;
            while bits != 0 {
                let word = byte * 8 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let value = next.next().expect("counted above");
                data[word * 8..word * 8 + 8].copy_from_slice(value);
            }
        }
        Ok(data)
    }

    /// Checks that the memory is at most 4 GiB and the runs lie inside it, ascending and
    /// disjoint; returns the number of pages they name.
    pub(crate) fn check_runs(&self) -> Result<usize, String> {
        if self.size > crate::MAX_MEMORY_LIMIT || !self.size.is_multiple_of(PAGE as u64) {
            return Err(format!(
                "a memory of {} bytes is not a whole number of pages up to 4 GiB",
                self.size
            ));
        }
        let pages = self.size / PAGE as u64;
        let mut next = 0u64;
        let mut total = 0u64;
        for &(first, count) in &self.runs {
            let (first, count) = (u64::from(first), u64::from(count));
            if count == 0 || first < next || first + count > pages {
                return Err(format!(
                    "the saved pages {first}+{count} do not fit a memory of {pages} pages in order"
                ));
            }
            next = first + count;
            total += count;
        }
        // At most 2^20 pages: the memory is at most 4 GiB.
        Ok(total as usize)
    }

    /// [`MemoryDiff::check_runs`], and that the data holds exactly the runs' pages (which
    /// [`MemoryDiff::unpack_data`] ensures when loading).
    #[cfg(test)]
    pub(crate) fn check(&self) -> Result<(), String> {
        let total = self.check_runs()?;
        if total * PAGE != self.data.len() {
            return Err(format!(
                "{} bytes of pages where the runs name {total} pages",
                self.data.len()
            ));
        }
        Ok(())
    }

    /// Turns `memory`, a fresh memory grown to [`MemoryDiff::size`] bytes, into the saved
    /// one. Requires runs that passed [`MemoryDiff::check_runs`] and the data of their pages.
    pub(crate) fn apply(&self, memory: &mut [u8]) {
        let mut offset = 0;
        for range in self.byte_ranges() {
            let len = range.len();
            xor(&mut memory[range], &self.data[offset..offset + len]);
            offset += len;
        }
    }

    fn byte_ranges(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        self.runs.iter().map(|&(first, count)| {
            let start = first as usize * PAGE;
            start..start + count as usize * PAGE
        })
    }
}

/// `into ^= with`, eight bytes at a time (compiled to wide loads).
fn xor(into: &mut [u8], with: &[u8]) {
    let (words, rest) = into.as_chunks_mut::<8>();
    let (with_words, with_rest) = with.as_chunks::<8>();
    for (a, b) in words.iter_mut().zip(with_words) {
        *a = (u64::from_ne_bytes(*a) ^ u64::from_ne_bytes(*b)).to_ne_bytes();
    }
    for (a, b) in rest.iter_mut().zip(with_rest) {
        *a ^= b;
    }
}

fn is_zero(bytes: &[u8]) -> bool {
    // Eight bytes at a time: compiled to wide loads.
    let (words, rest) = bytes.as_chunks::<8>();
    words.iter().all(|w| u64::from_ne_bytes(*w) == 0) && rest.iter().all(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changed_pages_and_nonzero_grown_pages_are_kept_and_restored() {
        let image = vec![7u8; 4 * PAGE];
        let mut memory = image.clone();
        memory.resize(8 * PAGE, 0);
        memory[PAGE + 5] = 1; // page 1
        memory[2 * PAGE] = 2; // page 2: joins the run of page 1
        memory[6 * PAGE + 9] = 3; // page 6: grown, not zero
        let diff = MemoryDiff::capture(&memory, &image);
        assert_eq!(diff.runs, vec![(1, 2), (6, 1)]);
        assert_eq!(diff.data.len(), 3 * PAGE);
        // Each page as its XOR with the fresh one: only the changed bytes are not zero.
        let changed: Vec<(usize, u8)> = diff
            .data
            .iter()
            .enumerate()
            .filter(|(_, b)| **b != 0)
            .map(|(i, b)| (i, *b))
            .collect();
        assert_eq!(changed, vec![(5, 7 ^ 1), (PAGE, 7 ^ 2), (2 * PAGE + 9, 3)]);
        assert_eq!(diff.size, 8 * PAGE as u64);
        assert_eq!(diff.check(), Ok(()));

        let mut restored = image.clone();
        restored.resize(8 * PAGE, 0);
        diff.apply(&mut restored);
        assert!(restored == memory);
    }

    #[test]
    fn packing_keeps_only_the_words_that_are_not_zero() {
        let mut data = vec![0u8; 2 * PAGE];
        data[3] = 1;
        data[PAGE + 17] = 2;
        data[2 * PAGE - 1] = 3;
        let diff = MemoryDiff {
            size: 4 * PAGE as u64,
            runs: vec![(0, 2)],
            data,
        };
        let packed = diff.packed_data();
        assert_eq!(packed.len(), 2 * PAGE / 64 + 3 * 8);
        assert_eq!(MemoryDiff::unpack_data(&packed, 2), Ok(diff.data.clone()));
        assert_eq!(
            MemoryDiff::unpack_data(&packed[..packed.len() - 1], 2),
            Err("the memory's word map names 3 words, 23 bytes follow".into())
        );
        assert_eq!(
            MemoryDiff::unpack_data(&packed[..10], 2),
            Err("the memory's word map is cut short".into())
        );
    }

    #[test]
    fn runs_outside_the_memory_or_out_of_order_are_refused() {
        let diff = |runs: Vec<(u32, u32)>, pages: usize| MemoryDiff {
            size: 4 * PAGE as u64,
            runs,
            data: vec![0; pages * PAGE],
        };
        assert_eq!(
            diff(vec![(3, 2)], 2).check(),
            Err("the saved pages 3+2 do not fit a memory of 4 pages in order".into())
        );
        assert_eq!(
            diff(vec![(2, 1), (1, 1)], 2).check(),
            Err("the saved pages 1+1 do not fit a memory of 4 pages in order".into())
        );
        assert_eq!(
            diff(vec![(0, 1)], 2).check(),
            Err("8192 bytes of pages where the runs name 1 pages".into())
        );
        assert_eq!(
            diff(vec![(u32::MAX, u32::MAX)], 0).check(),
            Err(format!(
                "the saved pages {}+{} do not fit a memory of 4 pages in order",
                u32::MAX,
                u32::MAX
            ))
        );
    }
}
