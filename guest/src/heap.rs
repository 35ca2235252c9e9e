//! Makes QuickJS measure its heap on WASI as it does on Linux.
//!
//! QuickJS asks its allocator table for the usable size of every block it allocates: to count
//! its heap (the heap limit that `cm_run` sets, and the GC threshold) and to use a block's slack
//! (appending to a string in place, growing a buffer without copying). QuickJS-ng's WASI build
//! puts a function there that answers 0 for every block (its `js__malloc_usable_size` has no WASI
//! branch), so on WASI the heap limit only counted 8 bytes per block, and `s += x` copied the
//! whole string every time. wasi-libc's dlmalloc does export `malloc_usable_size`; [`install`]
//! puts it into the runtime's table, which is what the Linux build of the same QuickJS uses.
//!
//! It also enforces the heap limit itself ([`set_limit`]), with a reserve: when QuickJS runs out
//! of memory it allocates an `InternalError` to throw, and at QuickJS's own limit that allocation
//! fails too, so QuickJS throws `null` instead — a script then ended with "Uncaught null" of kind
//! `exception`, depending on how close to the limit the failing allocation left the heap. Here,
//! once an allocation has been refused, [`RESERVE`] more bytes are granted so that the error can
//! be made, and [`exhausted`] tells the prelude that a `null` it catches is that error.

use std::cell::Cell;
use std::ffi::c_void;

use javy::quickjs::qjs;

unsafe extern "C" {
    /// wasi-libc (dlmalloc): the usable size of a block from `malloc`.
    fn malloc_usable_size(ptr: *mut c_void) -> usize;
    /// Where the linker put the start of the heap (after static data and the shadow stack).
    static __heap_base: u8;
}

/// QuickJS-ng's private `JSMallocState` (quickjs.c; rquickjs-sys 0.12.2, QuickJS-ng 0.15.1).
#[repr(C)]
struct MallocState {
    malloc_count: usize,
    malloc_size: usize,
    malloc_limit: usize,
    opaque: *mut c_void,
}

/// Bytes granted past the heap limit once an allocation has been refused: room for QuickJS to
/// make the "out of memory" error (message, stack, backtrace) and for the prelude to report it.
/// `heap_limit` in the host leaves 3 MiB of linear memory above the limit for this and the stack.
pub const RESERVE: usize = 64 << 10;

thread_local! {
    /// The runtime whose allocations [`limited_malloc`] and co. limit (set by [`install`]).
    static RUNTIME: Cell<*mut RuntimeHead> = const { Cell::new(std::ptr::null_mut()) };
    /// Whether an allocation was refused since the limit was set. Written only when it changes:
    /// every page an eval writes costs time when the instance's memory is reset, and this one
    /// would be written by nothing else.
    static REFUSED: Cell<bool> = const { Cell::new(false) };
}

/// The first two fields of QuickJS-ng's private `struct JSRuntime`.
#[repr(C)]
struct RuntimeHead {
    mf: qjs::JSMallocFunctions,
    malloc_state: MallocState,
}

unsafe extern "C" fn usable_size(ptr: *const c_void) -> qjs::size_t {
    if ptr.is_null() {
        return 0;
    }
    // SAFETY: QuickJS only asks about blocks its allocator (wasi-libc's malloc) returned.
    let size = unsafe { malloc_usable_size(ptr.cast_mut()) };
    // wasm32: `size_t` and `usize` are both 32 bits.
    size as qjs::size_t
}

/// [`usable_size`] without the call: what wasi-libc's dlmalloc computes, read from the block's
/// header directly. QuickJS asks on every allocation and every free, and the two nested wasm
/// calls cost more than the answer (~8% of a tool call). [`install`] only uses it after checking
/// that it agrees with `malloc_usable_size` on blocks of many sizes.
unsafe extern "C" fn usable_size_from_header(ptr: *const c_void) -> qjs::size_t {
    if ptr.is_null() {
        return 0;
    }
    // SAFETY: every block dlmalloc returns is preceded by its chunk's 4-byte head (wasm32).
    let head = unsafe { ptr.cast::<u32>().sub(1).read() };
    chunk_usable_size(head) as qjs::size_t
}

/// dlmalloc (wasm32, no footers): the head holds the chunk size (a multiple of 8) and two flag
/// bits: "this chunk is in use" (2) and "the previous one is" (1); neither set means a mapped
/// chunk (8 bytes of overhead, never made by wasi-libc), only the previous one a free chunk.
fn chunk_usable_size(head: u32) -> u32 {
    match head & 3 {
        1 => 0,
        0 => (head & !7).wrapping_sub(8),
        _ => (head & !7).wrapping_sub(4),
    }
}

/// Whether [`usable_size_from_header`] gives what `malloc_usable_size` gives, on fresh blocks of
/// many sizes (small bins and tree bins). None so large that the heap would have to grow: the
/// linear memory a snapshot holds is reset after every eval, and costs time per page.
fn header_reading_agrees() -> bool {
    let sizes = [1usize, 7, 8, 13, 24, 100, 255, 256, 1000, 4095, 4096, 12_000];
    sizes.iter().all(|&size| {
        // SAFETY: plain malloc/free of blocks this function owns.
        unsafe {
            let block = malloc(size);
            if block.is_null() {
                return false;
            }
            // `black_box`: the compiler knows `malloc` and would treat reading before the
            // block as undefined, folding the comparison away.
            let block = std::hint::black_box(block);
            let agrees = usable_size_from_header(block) == usable_size(block)
                && usable_size(block) as usize >= size;
            free(block);
            agrees
        }
    })
}

unsafe extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
    fn calloc(count: usize, size: usize) -> *mut c_void;
    fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
}

/// Whether `extra` more bytes fit: under the limit, or within the reserve once a refusal has
/// opened it.
fn admit(extra: usize) -> bool {
    let head = RUNTIME.get();
    if head.is_null() {
        return true;
    }
    // SAFETY: `install` stored a live runtime, checked to have this layout; the guest is
    // single-threaded and QuickJS is not inside its own bookkeeping when it calls the allocator.
    let (used, own_limit) = unsafe { ((*head).malloc_state.malloc_size, (*head).malloc_state.malloc_limit) };
    // QuickJS's own limit (checked before it calls here) is the heap limit plus the reserve.
    let wanted = used.saturating_add(extra);
    if wanted <= own_limit.saturating_sub(RESERVE) {
        return true;
    }
    if REFUSED.get() {
        return true; // the reserve is open; QuickJS's own limit still holds
    }
    REFUSED.set(true);
    false
}

unsafe extern "C" fn limited_malloc(_opaque: *mut c_void, size: qjs::size_t) -> *mut c_void {
    if !admit(size as usize) {
        return std::ptr::null_mut();
    }
    // SAFETY: plain malloc.
    unsafe { malloc(size as usize) }
}

unsafe extern "C" fn limited_calloc(_opaque: *mut c_void, count: qjs::size_t, size: qjs::size_t) -> *mut c_void {
    match (count as usize).checked_mul(size as usize) {
        // SAFETY: plain calloc.
        Some(total) if admit(total) => unsafe { calloc(count as usize, size as usize) },
        _ => std::ptr::null_mut(),
    }
}

unsafe extern "C" fn limited_realloc(_opaque: *mut c_void, ptr: *mut c_void, size: qjs::size_t) -> *mut c_void {
    // SAFETY: QuickJS passes a block of this allocator (or null).
    let old = unsafe { usable_size(ptr) } as usize;
    if !admit((size as usize).saturating_sub(old)) {
        return std::ptr::null_mut();
    }
    // SAFETY: as above.
    unsafe { realloc(ptr, size as usize) }
}

/// Sets the heap limit for this run (`usize::MAX`: none) and closes the reserve. QuickJS's own
/// limit is the heap limit plus [`RESERVE`] (the allocator table checks the heap limit itself),
/// or, if [`install`] failed, the heap limit alone.
pub fn set_limit(rt: *mut qjs::JSRuntime, limit: usize) {
    if REFUSED.get() {
        REFUSED.set(false);
    }
    let own = if RUNTIME.get().is_null() { limit } else { limit.saturating_add(RESERVE) };
    // SAFETY: `rt` is the live runtime.
    unsafe { qjs::JS_SetMemoryLimit(rt, own as qjs::size_t) };
}

/// Whether an allocation was refused in this run: a `null` exception is then QuickJS's "out of
/// memory" that could not be allocated.
pub fn exhausted() -> bool {
    REFUSED.get()
}

/// Puts the usable-size reader and the limiting allocators ([`set_limit`]) into `rt`'s allocator
/// table. Call once, right after the runtime is created. Returns `false` (and changes nothing) if the runtime's layout is not the one this
/// module was written for.
pub fn install(rt: *mut qjs::JSRuntime) -> bool {
    const SENTINEL: usize = 0x5EA1_C0DE;
    // SAFETY: `rt` is a live runtime. The layout of its head is checked against the public API
    // (the memory limit, written through `JS_SetMemoryLimit`, must read back at the offset this
    // module expects) before anything is written to it.
    unsafe {
        let head = rt.cast::<RuntimeHead>();
        let limit_before = (*head).malloc_state.malloc_limit;
        qjs::JS_SetMemoryLimit(rt, SENTINEL as qjs::size_t);
        let layout_ok = (*head).malloc_state.malloc_limit == SENTINEL
            && (*head).mf.js_malloc.is_some()
            && (*head).mf.js_free.is_some();
        if !layout_ok {
            // `cm_run` sets the real limit before any user code runs.
            qjs::JS_SetMemoryLimit(rt, qjs::size_t::MAX);
            return false;
        }
        qjs::JS_SetMemoryLimit(rt, limit_before as qjs::size_t);
        // The blocks allocated so far were counted as their overhead only, and will be
        // subtracted at their real size when freed: QuickJS aborts if its count would go below
        // zero. So count the whole heap as used, once (an over-estimate by its free space: the
        // heap limit leaves room for that).
        let heap_start = (&raw const __heap_base) as usize;
        let heap_end = core::arch::wasm32::memory_size(0) * 65536;
        (*head).malloc_state.malloc_size += heap_end.saturating_sub(heap_start);
        (*head).mf.js_malloc_usable_size = Some(if header_reading_agrees() {
            usable_size_from_header
        } else {
            usable_size
        });
        (*head).mf.js_malloc = Some(limited_malloc);
        (*head).mf.js_calloc = Some(limited_calloc);
        (*head).mf.js_realloc = Some(limited_realloc);
        RUNTIME.set(head);
    }
    true
}
