//! Makes QuickJS measure its heap on WASI as it does on Linux.
//!
//! QuickJS asks its allocator table for the usable size of every block it allocates: to count
//! its heap (the heap limit that `cm_run` sets, and the GC threshold) and to use a block's slack
//! (appending to a string in place, growing a buffer without copying). QuickJS-ng's WASI build
//! puts a function there that answers 0 for every block (its `js__malloc_usable_size` has no WASI
//! branch), so on WASI the heap limit only counted 8 bytes per block, and `s += x` copied the
//! whole string every time. wasi-libc's dlmalloc does export `malloc_usable_size`; [`install`]
//! puts it into the runtime's table, which is what the Linux build of the same QuickJS uses.

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

/// Puts `malloc_usable_size` into `rt`'s allocator table. Call once, right after the runtime is
/// created. Returns `false` (and changes nothing) if the runtime's layout is not the one this
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
        (*head).mf.js_malloc_usable_size = Some(usable_size);
    }
    true
}
