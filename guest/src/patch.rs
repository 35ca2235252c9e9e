//! What `guest/quickjs-wasi.patch` adds to QuickJS, declared in one place (the patch's C comments
//! are the reference for each), and the reader of 8-bit strings that the guest uses in three
//! places.

use std::ffi::c_void;

use javy::quickjs::qjs;

unsafe extern "C" {
    /// A block's usable size read from its dlmalloc chunk header.
    pub fn codemode_header_usable_size(ptr: *const c_void) -> usize;
    /// Nonzero once QuickJS may use `codemode_header_usable_size` (set by [`crate::heap`]).
    pub static mut codemode_header_sizes: i32;
    /// Asked when an allocation would cross the heap limit (set by [`crate::heap`]).
    pub static mut codemode_heap_grant: Option<extern "C" fn(usize, usize, usize) -> i32>;
    /// The enumerable own string-keyed properties of a plain object, keys and borrowed values,
    /// in insertion order, at most `max`; -1 if `JSON.stringify` could treat it differently.
    pub fn codemode_plain_properties(
        ctx: *mut qjs::JSContext,
        object: qjs::JSValue,
        keys: *mut qjs::JSAtom,
        values: *mut qjs::JSValue,
        max: i32,
    ) -> i32;
    /// The 8-bit characters of a string atom (if not `JS_ATOM_NULL`) or else of a string value,
    /// without copying; null when they are 16-bit or it is not a string.
    fn codemode_latin1(
        ctx: *mut qjs::JSContext,
        string: qjs::JSValue,
        atom: qjs::JSAtom,
        len: *mut u32,
    ) -> *const u8;
    /// A pending promise with no resolving functions.
    pub fn codemode_promise_new(ctx: *mut qjs::JSContext) -> qjs::JSValue;
    /// Resolves (`is_reject == 0`) or rejects a promise from `codemode_promise_new` as its
    /// resolving functions would; nothing if it is no longer pending.
    pub fn codemode_promise_settle(
        ctx: *mut qjs::JSContext,
        promise: qjs::JSValue,
        value: qjs::JSValue,
        is_reject: i32,
    );
    /// The line of the innermost frame running code of file `filename` (an atom), its column in
    /// `col`; 0 for both when there is none.
    pub fn codemode_call_site(
        ctx: *mut qjs::JSContext,
        filename: qjs::JSAtom,
        col: *mut i32,
    ) -> i32;
    /// 1 when anything ever waited on `promise` (a reaction was added), 0 when nothing did, -1
    /// when it is not a promise.
    pub fn codemode_promise_is_handled(ctx: *mut qjs::JSContext, promise: qjs::JSValue) -> i32;
}

/// The characters of string value `string` (or, if `atom` is not `JS_ATOM_NULL`, of that string
/// atom) when they are 8-bit (Latin-1), read in place; `None` when they are 16-bit, or it is not
/// a plain string (a rope, say).
///
/// # Safety
/// `string` or `atom` is live in `ctx`, and outlives the slice, which nothing may change
/// meanwhile (no JavaScript runs).
pub unsafe fn latin1<'a>(
    ctx: *mut qjs::JSContext,
    string: qjs::JSValue,
    atom: qjs::JSAtom,
) -> Option<&'a [u8]> {
    let mut len = 0u32;
    // SAFETY: as the caller promises; QuickJS gives `len` characters at the pointer.
    unsafe {
        let chars = codemode_latin1(ctx, string, atom, &mut len);
        (!chars.is_null()).then(|| std::slice::from_raw_parts(chars, len as usize))
    }
}
