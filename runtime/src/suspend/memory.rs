//! A parked sandbox's linear memory as the pages that differ from its guest's fresh memory.
//!
//! The fresh memory is what a new instance starts with: the snapshot image, then zeros where
//! the memory grew. A page that differs is kept as its XOR with the fresh page, so the bytes a
//! script did not change are zeros, and packed: a map with one bit per 4-byte word (set: not
//! zero), then the words that are not zero. A heap page where a few objects changed, or the
//! zero tag word of every integer value, costs almost nothing (measured on the `suspend`
//! bench's eval: the 304 KiB of pages a 10,000-element array dirties pack into 101 KiB, which
//! zstd's fast levels make 52 KiB; docs/PERFORMANCE-JOURNAL.md).
//! Which pages to compare comes from the kernel where it can tell ([`super::resident`]): only
//! pages the sandbox wrote can differ.
//! A restore is: instantiate, grow to the saved size, XOR the saved words in. Pages are 4 KiB
//! (the host's page, not wasm's 64 KiB): a script dirties scattered small pieces of the heap.

use std::ops::Range;

/// Granularity of the difference.
pub(crate) const PAGE: usize = 4096;

/// Bytes of one packed word.
const WORD: usize = 4;

/// Words in a page.
const WORDS_PER_PAGE: usize = PAGE / WORD;

/// Bytes of the word map per page: one bit per word.
pub(crate) const MAP_PER_PAGE: usize = WORDS_PER_PAGE / 8;

/// The pages of a memory that differ from its image (or, past the image's end, from zero).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemoryDiff {
    /// The memory's size in bytes (a multiple of wasm's 64 KiB page).
    pub(crate) size: u64,
    /// Runs of consecutive saved pages: (first page, number of pages), ascending, disjoint.
    pub(crate) runs: Vec<(u32, u32)>,
    /// The saved pages' bytes XOR the fresh memory's, run after run, as 4-byte words: one bit
    /// per word, set when the word is not zero ([`MAP_PER_PAGE`] bytes a page).
    pub(crate) map: Vec<u8>,
    /// The words the map marks, in order.
    pub(crate) words: Vec<u8>,
}

impl MemoryDiff {
    /// The pages of `memory` that differ from `image` (those past `image`'s end: that are
    /// not all zeros), each XOR its fresh page. `memory` is a live sandbox's memory: only the
    /// pages the kernel says may have been written are compared ([`super::resident`]).
    pub(crate) fn capture(memory: &[u8], image: &[u8]) -> Self {
        match super::resident::candidates(memory) {
            Some(written) => Self::capture_in(memory, image, written),
            None => Self::capture_in(memory, image, std::iter::once(0..memory.len())),
        }
    }

    /// [`MemoryDiff::capture`] comparing only the pages in `ranges` (ascending, page-aligned):
    /// every other page is known to be unchanged.
    pub(crate) fn capture_in(
        memory: &[u8],
        image: &[u8],
        ranges: impl IntoIterator<Item = Range<usize>>,
    ) -> Self {
        let mut diff = MemoryDiff {
            size: memory.len() as u64,
            runs: Vec::new(),
            map: Vec::new(),
            words: Vec::new(),
        };
        for range in ranges {
            let range = range.start.min(memory.len())..range.end.min(memory.len());
            for start in range.step_by(PAGE) {
                let page = &memory[start..(start + PAGE).min(memory.len())];
                let fresh = image.get(start..start + page.len());
                let same = match fresh {
                    Some(fresh) => page == fresh,
                    None => is_zero(page),
                };
                if !same {
                    diff.push_page(start / PAGE, page, fresh);
                }
            }
        }
        diff
    }

    /// The diff of pages already XORed with their fresh content: `data` holds the pages of
    /// `runs`, in order (what format version 1 stored, unpacked).
    pub(crate) fn from_xored(size: u64, runs: Vec<(u32, u32)>, data: &[u8]) -> Self {
        let mut diff = MemoryDiff {
            size,
            runs: Vec::new(),
            map: Vec::new(),
            words: Vec::new(),
        };
        let mut pages = data.chunks(PAGE);
        for (first, count) in runs {
            for index in first..first + count {
                let page = pages.next().unwrap_or_default();
                diff.push_page(index as usize, page, None);
            }
        }
        diff
    }

    /// Adds page `index` (`page` XOR `fresh`, when given), packed.
    fn push_page(&mut self, index: usize, page: &[u8], fresh: Option<&[u8]>) {
        let index = index as u32;
        match self.runs.last_mut() {
            Some((first, count)) if *first + *count == index => *count += 1,
            _ => self.runs.push((index, 1)),
        }
        // The XOR first (wide and branch-free), then the words that are not zero: each is
        // written, and the count moves past it only when it is not zero.
        let mut xored = [0u32; WORDS_PER_PAGE];
        let page = page.as_chunks::<WORD>().0;
        for (x, word) in xored.iter_mut().zip(page) {
            *x = u32::from_ne_bytes(*word);
        }
        if let Some(fresh) = fresh {
            for (x, word) in xored.iter_mut().zip(fresh.as_chunks::<WORD>().0) {
                *x ^= u32::from_ne_bytes(*word);
            }
        }
        // Two words a step (halving the chain of dependent steps): the first word that is not
        // zero goes first, the second after it; `count` moves past those that are not zero,
        // and what lies past it is overwritten by the next step.
        let mut kept = [0u32; 2 * WORDS_PER_PAGE];
        let mut count = 0usize;
        let map_at = self.map.len();
        self.map.resize(map_at + MAP_PER_PAGE, 0);
        let map = &mut self.map[map_at..];
        for (bits, group) in map.iter_mut().zip(xored.as_chunks::<8>().0) {
            for (j, &[low, high]) in group.as_chunks::<2>().0.iter().enumerate() {
                let (low_kept, high_kept) = (usize::from(low != 0), usize::from(high != 0));
                // `count` stays at most the page's number of words: the mask only drops the
                // bounds check.
                kept[count & (2 * WORDS_PER_PAGE - 1)] = if low_kept == 1 { low } else { high };
                kept[(count + 1) & (2 * WORDS_PER_PAGE - 1)] = high;
                *bits |= ((low_kept | high_kept << 1) as u8) << (2 * j);
                count += low_kept + high_kept;
            }
        }
        let at = self.words.len();
        self.words.resize(at + count * WORD, 0);
        let out = self.words[at..].as_chunks_mut::<WORD>().0;
        for (out, word) in out.iter_mut().zip(&kept[..count]) {
            *out = word.to_ne_bytes();
        }
    }

    /// Bytes of the saved pages (before packing and compression).
    pub(crate) fn page_bytes(&self) -> usize {
        self.map.len() / MAP_PER_PAGE * PAGE
    }

    /// Splits the packed pages of `pages` pages (map, then words) and checks that they agree.
    pub(crate) fn unpack(packed: &[u8], pages: usize) -> Result<(Vec<u8>, Vec<u8>), String> {
        let (map, words) = packed
            .split_at_checked(pages * MAP_PER_PAGE)
            .ok_or("the memory's word map is cut short")?;
        let ones: usize = map.iter().map(|b| b.count_ones() as usize).sum();
        if words.len() != ones * WORD {
            return Err(format!(
                "the memory's word map names {ones} words, {} bytes follow",
                words.len()
            ));
        }
        Ok((map.to_vec(), words.to_vec()))
    }

    /// Pages of 8-byte words packed as format version 1 stored them (map, then words), as
    /// plain XORed pages.
    pub(crate) fn unpack_v1(packed: &[u8], pages: usize) -> Result<Vec<u8>, String> {
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
        if self.size > crate::RuntimeConfig::MAX_MEMORY_LIMIT
            || !self.size.is_multiple_of(PAGE as u64)
        {
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

    /// [`MemoryDiff::check_runs`], and that the map covers exactly the runs' pages and names
    /// as many words as follow (which [`MemoryDiff::unpack`] ensures when loading).
    #[cfg(test)]
    pub(crate) fn check(&self) -> Result<(), String> {
        let total = self.check_runs()?;
        if total * MAP_PER_PAGE != self.map.len() {
            return Err(format!(
                "a word map of {} pages where the runs name {total} pages",
                self.map.len() / MAP_PER_PAGE
            ));
        }
        let ones: usize = self.map.iter().map(|b| b.count_ones() as usize).sum();
        if ones * WORD != self.words.len() {
            return Err(format!("{ones} words mapped, {} bytes", self.words.len()));
        }
        Ok(())
    }

    /// Turns `memory`, a fresh memory grown to [`MemoryDiff::size`] bytes, into the saved
    /// one. Requires runs that passed [`MemoryDiff::check_runs`] and a map and words that
    /// agree with them (as [`MemoryDiff::unpack`] checks).
    pub(crate) fn apply(&self, memory: &mut [u8]) {
        let mut maps = self.map.chunks_exact(MAP_PER_PAGE);
        let mut words = self.words.as_chunks::<WORD>().0.iter();
        for range in self.byte_ranges() {
            for page in memory[range].chunks_exact_mut(PAGE) {
                let map = maps.next().expect("a map per page");
                for (byte, &bits) in map.iter().enumerate() {
                    let mut bits = bits;
                    while bits != 0 {
                        let at = (byte * 8 + bits.trailing_zeros() as usize) * WORD;
                        bits &= bits - 1;
                        let word = words.next().expect("a word per bit");
                        let target = &mut page[at..at + WORD];
                        let value = u32::from_ne_bytes((*target).try_into().expect("4"))
                            ^ u32::from_ne_bytes(*word);
                        target.copy_from_slice(&value.to_ne_bytes());
                    }
                }
            }
        }
    }

    fn byte_ranges(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        self.runs.iter().map(|&(first, count)| {
            let start = first as usize * PAGE;
            start..start + count as usize * PAGE
        })
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
        assert_eq!(diff.page_bytes(), 3 * PAGE);
        // Each page as its XOR with the fresh one, packed: only the words holding a changed
        // byte are kept (word 1 of page 1, word 0 of page 2, word 2 of page 6).
        let mut map = vec![0u8; 3 * MAP_PER_PAGE];
        map[0] = 1 << 1;
        map[MAP_PER_PAGE] = 1;
        map[2 * MAP_PER_PAGE] = 1 << 2;
        assert_eq!(diff.map, map);
        assert_eq!(diff.words, vec![0, 7 ^ 1, 0, 0, 7 ^ 2, 0, 0, 0, 0, 3, 0, 0]);
        assert_eq!(diff.size, 8 * PAGE as u64);
        assert_eq!(diff.check(), Ok(()));

        let mut restored = image.clone();
        restored.resize(8 * PAGE, 0);
        diff.apply(&mut restored);
        assert!(restored == memory);

        // Told which pages may have changed, only those are compared.
        let told = MemoryDiff::capture_in(&memory, &image, [PAGE..2 * PAGE, 6 * PAGE..8 * PAGE]);
        assert_eq!(told.runs, vec![(1, 1), (6, 1)]);
        assert_eq!(told.check(), Ok(()));
    }

    #[test]
    fn unpacking_checks_the_map_against_the_words() {
        let mut memory = vec![0u8; 4 * PAGE];
        memory[3] = 1;
        memory[PAGE + 17] = 2;
        memory[2 * PAGE - 1] = 3;
        let diff = MemoryDiff::capture(&memory, &[]);
        assert_eq!(diff.runs, vec![(0, 2)]);
        let mut packed = diff.map.clone();
        packed.extend_from_slice(&diff.words);
        assert_eq!(packed.len(), 2 * MAP_PER_PAGE + 3 * 4);
        assert_eq!(
            MemoryDiff::unpack(&packed, 2),
            Ok((diff.map.clone(), diff.words.clone()))
        );
        assert_eq!(
            MemoryDiff::unpack(&packed[..packed.len() - 1], 2),
            Err("the memory's word map names 3 words, 11 bytes follow".into())
        );
        assert_eq!(
            MemoryDiff::unpack(&packed[..10], 2),
            Err("the memory's word map is cut short".into())
        );
    }

    #[test]
    fn version_1_pages_unpack_and_repack() {
        // Format version 1 packed 8-byte words: a bitmap of 64 bytes a page, then the words.
        let mut packed = vec![0u8; 2 * PAGE / 64];
        packed[0] = 1; // word 0 of page 0
        packed[PAGE / 64] = 1 << 3; // word 3 of page 1
        packed.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 2]);
        packed.extend_from_slice(&[0, 0, 0, 0, 5, 0, 0, 0]);
        let data = MemoryDiff::unpack_v1(&packed, 2).unwrap();
        let mut expected = vec![0u8; 2 * PAGE];
        expected[0] = 1;
        expected[7] = 2;
        expected[PAGE + 3 * 8 + 4] = 5;
        assert!(data == expected);
        assert_eq!(
            MemoryDiff::unpack_v1(&packed[..packed.len() - 1], 2),
            Err("the memory's word map names 2 words, 15 bytes follow".into())
        );
        let diff = MemoryDiff::from_xored(8 * PAGE as u64, vec![(5, 2)], &data);
        assert_eq!(diff.check(), Ok(()));
        let mut memory = vec![0u8; 8 * PAGE];
        diff.apply(&mut memory);
        assert!(memory[5 * PAGE..7 * PAGE] == expected[..]);
    }

    #[test]
    fn runs_outside_the_memory_or_out_of_order_are_refused() {
        let diff = |runs: Vec<(u32, u32)>, pages: usize| MemoryDiff {
            size: 4 * PAGE as u64,
            runs,
            map: vec![0; pages * MAP_PER_PAGE],
            words: Vec::new(),
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
            Err("a word map of 2 pages where the runs name 1 pages".into())
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
