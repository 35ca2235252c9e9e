//! The pages of a live linear memory that may differ from the memory it was mapped from, as
//! the kernel's page tables tell (Linux's `PAGEMAP_SCAN` ioctl, 6.7+).
//!
//! A sandbox's memory is a private mapping of its guest's image (copy-on-write) over anonymous
//! zeros. A page the guest never wrote is either not present (never touched, or dropped by the
//! pool's reset) or present as the image's file page or the shared zero page; only a page that
//! was written — in this eval, or in an earlier one and reset in place by the pool — is a
//! private anonymous page, present or swapped out. Comparing only those with the image finds
//! the same pages as comparing all of them (wasmtime resets its pool slots on the same rule),
//! in a fraction of the time: a parked eval's memory is mostly image it never wrote.
//!
//! Where the ioctl is missing (another OS, an older kernel, no `/proc`), or in a forked child
//! (the pagemap opened belongs to the parent), [`candidates`] says nothing and every page is
//! compared.

use std::ops::Range;

/// Byte ranges of `memory` (relative to its start, each a whole number of host pages) outside
/// which it is certainly unchanged since it was mapped; `None` when that cannot be known.
pub(crate) fn candidates(memory: &[u8]) -> Option<Vec<Range<usize>>> {
    #[cfg(target_os = "linux")]
    {
        linux::candidates(memory)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = memory;
        None
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::fs::File;
    use std::ops::Range;
    use std::os::fd::AsRawFd;
    use std::sync::OnceLock;

    /// `struct page_region` of `<linux/fs.h>`.
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct PageRegion {
        start: u64,
        end: u64,
        categories: u64,
    }

    /// `struct pm_scan_arg` of `<linux/fs.h>`.
    #[repr(C)]
    struct PmScanArg {
        size: u64,
        flags: u64,
        start: u64,
        end: u64,
        walk_end: u64,
        vec: u64,
        vec_len: u64,
        max_pages: u64,
        category_inverted: u64,
        category_mask: u64,
        category_anyof_mask: u64,
        return_mask: u64,
    }

    /// `_IOWR('f', 16, struct pm_scan_arg)`.
    const PAGEMAP_SCAN: u64 =
        (3 << 30) | ((size_of::<PmScanArg>() as u64) << 16) | (0x66 << 8) | 16;
    const PAGE_IS_FILE: u64 = 1 << 2;
    const PAGE_IS_PRESENT: u64 = 1 << 3;
    const PAGE_IS_SWAPPED: u64 = 1 << 4;
    const PAGE_IS_PFNZERO: u64 = 1 << 5;

    /// Regions one ioctl reports at most; a scan with more goes on where it stopped.
    const REGIONS: usize = 64;

    /// This process's `/proc/self/pagemap`, with the pid that opened it.
    fn pagemap() -> Option<&'static File> {
        static PAGEMAP: OnceLock<Option<(u32, File)>> = OnceLock::new();
        let (pid, file) = PAGEMAP
            .get_or_init(|| Some((std::process::id(), File::open("/proc/self/pagemap").ok()?)))
            .as_ref()?;
        // After a fork the file still describes the parent's memory.
        (*pid == std::process::id()).then_some(file)
    }

    fn host_page() -> usize {
        // SAFETY: sysconf only reads a system constant.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(page).unwrap_or(0)
    }

    pub(super) fn candidates(memory: &[u8]) -> Option<Vec<Range<usize>>> {
        if memory.is_empty() {
            return Some(Vec::new());
        }
        let page = host_page();
        let base = memory.as_ptr() as usize;
        if page == 0 || !base.is_multiple_of(page) || !memory.len().is_multiple_of(page) {
            return None;
        }
        let file = pagemap()?;
        let end = (base + memory.len()) as u64;
        let mut found: Vec<Range<usize>> = Vec::new();
        let mut regions = [PageRegion::default(); REGIONS];
        let mut at = base as u64;
        while at < end {
            // Pages that are neither the image's file page nor the zero page, and are present
            // or swapped out: private copies, made by a write.
            let mut arg = PmScanArg {
                size: size_of::<PmScanArg>() as u64,
                flags: 0,
                start: at,
                end,
                walk_end: 0,
                vec: regions.as_mut_ptr() as u64,
                vec_len: REGIONS as u64,
                max_pages: 0,
                category_inverted: PAGE_IS_FILE | PAGE_IS_PFNZERO,
                category_mask: PAGE_IS_FILE | PAGE_IS_PFNZERO,
                category_anyof_mask: PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
                return_mask: 0,
            };
            // SAFETY: the ioctl reads the page tables of [start, end), a range this process
            // has mapped (`memory`), and writes at most `vec_len` regions into `regions`.
            let count = unsafe {
                libc::ioctl(
                    file.as_raw_fd(),
                    PAGEMAP_SCAN as _,
                    &mut arg as *mut PmScanArg,
                )
            };
            let count = usize::try_from(count).ok().filter(|&n| n <= REGIONS)?;
            for region in &regions[..count] {
                if region.start < at || region.end > end || region.start >= region.end {
                    return None;
                }
                let range = (region.start as usize - base)..(region.end as usize - base);
                match found.last_mut() {
                    Some(last) if last.end == range.start => last.end = range.end,
                    _ => found.push(range),
                }
            }
            if arg.walk_end <= at || arg.walk_end > end {
                return None;
            }
            at = arg.walk_end;
        }
        Some(found)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A private anonymous mapping of `pages` pages, unmapped on drop.
    struct Mapping(*mut u8, usize);

    impl Mapping {
        fn anonymous(pages: usize) -> Mapping {
            let len = pages * 4096;
            // SAFETY: a fresh private mapping, owned by the value.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(ptr, libc::MAP_FAILED);
            Mapping(ptr.cast(), len)
        }

        fn file(file: &std::fs::File, pages: usize) -> Mapping {
            use std::os::fd::AsRawFd;
            let len = pages * 4096;
            // SAFETY: a fresh private (copy-on-write) mapping of the file, owned by the value.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE,
                    file.as_raw_fd(),
                    0,
                )
            };
            assert_ne!(ptr, libc::MAP_FAILED);
            Mapping(ptr.cast(), len)
        }

        fn bytes(&mut self) -> &mut [u8] {
            // SAFETY: the mapping is readable and writable for its length while it lives.
            unsafe { std::slice::from_raw_parts_mut(self.0, self.1) }
        }
    }

    impl Drop for Mapping {
        fn drop(&mut self) {
            // SAFETY: unmaps what `mmap` returned, once.
            unsafe { libc::munmap(self.0.cast(), self.1) };
        }
    }

    #[test]
    fn only_written_pages_of_anonymous_memory_are_candidates() {
        let mut mapping = Mapping::anonymous(16);
        let memory = mapping.bytes();
        memory[3 * 4096 + 10] = 1;
        memory[4 * 4096] = 1;
        memory[9 * 4096 + 4095] = 1;
        // Read, never written: the shared zero page.
        assert_eq!(std::hint::black_box(memory[12 * 4096]), 0);
        assert_eq!(
            candidates(memory),
            Some(vec![3 * 4096..5 * 4096, 9 * 4096..10 * 4096])
        );
        assert_eq!(candidates(&memory[..0]), Some(Vec::new()));
        // Not page-aligned: nothing known.
        assert_eq!(candidates(&memory[1..4097]), None);
    }

    #[test]
    #[expect(
        clippy::single_range_in_vec_init,
        reason = "one range is what is expected"
    )]
    fn pages_of_a_private_file_mapping_are_candidates_once_written() {
        let path =
            std::env::temp_dir().join(format!("codemode-resident-test-{}.bin", std::process::id()));
        std::fs::write(&path, vec![7u8; 8 * 4096]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let mut mapping = Mapping::file(&file, 8);
        std::fs::remove_file(&path).unwrap();
        let memory = mapping.bytes();
        // Read: the file's page.
        assert_eq!(std::hint::black_box(memory[4096]), 7);
        memory[5 * 4096 + 1] = 8; // a private copy
        assert_eq!(candidates(memory), Some(vec![5 * 4096..6 * 4096]));
    }
}
