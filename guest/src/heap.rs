//! The guest's half of QuickJS's heap on WASI; the other half is `guest/quickjs-wasi.patch`,
//! which `build.sh` applies to QuickJS before building it.
//!
//! QuickJS counts its heap by asking for the usable size of every block it allocates and frees:
//! for the heap limit that `cm_run` sets, for the GC threshold, and to use a block's slack
//! (appending to a string in place, growing a buffer without copying). Unpatched QuickJS-ng asks
//! its allocator table, through two indirect calls per allocation and two per free, and its WASI
//! build answers 0 for every block: the heap limit would count 8 bytes per block, and `s += x`
//! would copy the whole string every time. The patched QuickJS calls wasi-libc's dlmalloc
//! directly and reads a block's usable size from its chunk header once [`install`] has checked
//! that reading against `malloc_usable_size`; until then (or if it disagrees) it calls
//! `malloc_usable_size`.
//!
//! The heap limit has a reserve: when QuickJS runs out of memory it allocates an `InternalError`
//! to throw, and at the limit that allocation would fail too, so QuickJS would throw `null`
//! instead, and whether a script ended with that "Uncaught null" of kind `exception` or with the
//! memory-limit error would depend on how close to the limit the failing allocation left the
//! heap. So once an allocation has been refused, [`RESERVE`] more bytes are granted ([`grant`],
//! which the patched QuickJS asks whenever an allocation would cross the limit) for the error to
//! be made, and [`exhausted`] tells the prelude that a `null` it catches is that error.

use std::cell::Cell;
use std::ffi::c_void;

use javy::quickjs::qjs;

use crate::patch;

unsafe extern "C" {
    /// wasi-libc (dlmalloc): the usable size of a block from `malloc`.
    fn malloc_usable_size(ptr: *mut c_void) -> usize;
    fn malloc(size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
}

/// Bytes granted past the heap limit once an allocation has been refused: room for QuickJS to
/// make the "out of memory" error (message, stack, backtrace) and for the prelude to report it.
/// `heap_limit` in the host leaves 3 MiB of linear memory above the limit for this and the stack.
pub const RESERVE: usize = 64 << 10;

thread_local! {
    /// Whether an allocation was refused since the limit was set. Written only when it changes:
    /// every page an eval writes costs time when the instance's memory is reset, and this one
    /// would be written by nothing else.
    static REFUSED: Cell<bool> = const { Cell::new(false) };
}

/// Asked by the patched QuickJS when `used + extra` bytes would cross the heap limit `limit`:
/// nonzero allows the allocation. The first such allocation of a run is refused and opens the
/// reserve; after that, allocations are allowed up to `limit + RESERVE`.
extern "C" fn grant(used: usize, extra: usize, limit: usize) -> i32 {
    if !REFUSED.get() {
        REFUSED.set(true);
        return 0;
    }
    i32::from(used.saturating_add(extra) <= limit.saturating_add(RESERVE))
}

/// Sets the heap limit for this run (`usize::MAX`: none) and closes the reserve.
pub fn set_limit(rt: *mut qjs::JSRuntime, limit: usize) {
    if REFUSED.get() {
        REFUSED.set(false);
    }
    // SAFETY: `rt` is the live runtime.
    unsafe { qjs::JS_SetMemoryLimit(rt, limit as qjs::size_t) };
}

/// Whether an allocation was refused in this run: a `null` exception is then QuickJS's "out of
/// memory" that could not be allocated.
pub fn exhausted() -> bool {
    REFUSED.get()
}

/// Gives QuickJS the heap limit's reserve ([`grant`]), and lets it read usable sizes from block
/// headers if that reading agrees with `malloc_usable_size`; returns whether it does. Call once,
/// at start.
pub fn install() -> bool {
    let agrees = header_reading_agrees();
    // SAFETY: plain stores to the patch's globals; the guest is single-threaded.
    unsafe {
        (&raw mut patch::codemode_heap_grant).write(Some(grant));
        if agrees {
            (&raw mut patch::codemode_header_sizes).write(1);
        }
    }
    agrees
}

/// Whether `codemode_header_usable_size` gives what `malloc_usable_size` gives, on fresh blocks
/// of many sizes (small bins and tree bins). None so large that the heap would have to grow: the
/// linear memory a snapshot holds is reset after every eval, and costs time per page.
fn header_reading_agrees() -> bool {
    let sizes = [
        1usize, 7, 8, 13, 24, 100, 255, 256, 1000, 4095, 4096, 12_000,
    ];
    sizes.iter().all(|&size| {
        // SAFETY: plain malloc/free of blocks this function owns.
        unsafe {
            let block = malloc(size);
            if block.is_null() {
                return false;
            }
            // `black_box`: keeps the block opaque, so the reads before it are not reasoned about.
            let block = std::hint::black_box(block);
            let usable = malloc_usable_size(block);
            let agrees = patch::codemode_header_usable_size(block) == usable && usable >= size;
            free(block);
            agrees
        }
    })
}
