//! JSON text for the common shape of tool arguments — a plain object of numbers, booleans,
//! `null` and strings — without running `JSON.stringify` (~2 µs of QuickJS per call). Anything
//! that `JSON.stringify` could treat differently (a `toJSON`, a getter, a proxy, another
//! prototype or class, nested values, integer-like keys, keys with 16-bit characters, strings
//! with lone surrogates) is declined, and the prelude's `toJson` encodes it. The host
//! parses what it receives, so only the parsed value must match `JSON.stringify`'s, not the text.
//!
//! It works on raw QuickJS values: it runs in every tool call, and rquickjs's handles cost a
//! context reference count and a type check each. The object's properties and 8-bit strings are
//! read in place, through two functions that `guest/quickjs-wasi.patch` adds to QuickJS (no
//! property table, descriptor or C string is allocated).

use javy::quickjs::{Value, qjs};

use crate::patch;

/// Frees the pending exception (this module declines rather than throws).
///
/// # Safety
/// `ctx` is a live context.
unsafe fn drop_exception(ctx: *mut qjs::JSContext) {
    // SAFETY: as the caller promises; the exception is owned and freed.
    unsafe { qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx)) };
}

/// Properties of the arguments object read at once; an object with more goes to `JSON.stringify`.
const MAX_PROPERTIES: usize = 16;

/// The JSON text of `value` when it is a plain object of primitives (ordinary, with the realm's
/// `Object.prototype`, data properties only, no `toJSON`); `None` to leave it to
/// `JSON.stringify`.
///
/// # Safety
/// `ctx` is a live context; `value` is a live value of it (borrowed).
pub unsafe fn plain_object(ctx: *mut qjs::JSContext, value: qjs::JSValue) -> Option<String> {
    let mut keys = [0 as qjs::JSAtom; MAX_PROPERTIES];
    let mut values = [qjs::JS_UNDEFINED; MAX_PROPERTIES];
    // SAFETY: as the caller promises; the arrays hold `MAX_PROPERTIES` entries. The values are
    // borrowed from the object, which outlives this function, and no JavaScript runs here.
    let count = unsafe {
        patch::codemode_plain_properties(
            ctx,
            value,
            keys.as_mut_ptr(),
            values.as_mut_ptr(),
            MAX_PROPERTIES as i32,
        )
    };
    let count = usize::try_from(count).ok()?;
    let mut json = String::with_capacity(16 * count + 2);
    json.push('{');
    for (&key, &value) in keys.iter().zip(&values).take(count) {
        // SAFETY: reading a live value's tag.
        if unsafe { qjs::JS_VALUE_GET_NORM_TAG(value) } == qjs::JS_TAG_UNDEFINED {
            continue; // JSON.stringify omits it
        }
        if json.len() > 1 {
            json.push(',');
        }
        // SAFETY: `key` is a live string atom of the object, which outlives this function.
        // A key with 16-bit characters is rare: left to JSON.stringify.
        append_latin1(
            unsafe { patch::latin1(ctx, qjs::JS_UNDEFINED, key) }?,
            &mut json,
        );
        json.push(':');
        // SAFETY: as above.
        if !unsafe { append_primitive(ctx, value, &mut json) } {
            return None;
        }
    }
    json.push('}');
    Some(json)
}

/// A primitive's JSON text — `null`, booleans, numbers (integers below 2^53 as integers, like
/// `JSON.stringify`; non-finite ones as `null`) and strings that are valid UTF-8 — parsing to
/// the same value as `JSON.stringify`'s text. `None` for anything else. Also encodes results.
pub fn primitive(value: &Value<'_>) -> Option<String> {
    let mut out = String::new();
    // SAFETY: a live value of a live context.
    unsafe { append_primitive(value.ctx().as_raw().as_ptr(), value.as_raw(), &mut out) }
        .then_some(out)
}

/// [`primitive`], appended to `out`; `false` for anything else (`out` may then hold part of a
/// string, for the caller to drop).
///
/// # Safety
/// `value` is a live value of `ctx` (borrowed).
unsafe fn append_primitive(
    ctx: *mut qjs::JSContext,
    value: qjs::JSValue,
    out: &mut String,
) -> bool {
    // SAFETY: as the caller promises; one tag read, then the payload of that tag.
    unsafe {
        match qjs::JS_VALUE_GET_NORM_TAG(value) {
            qjs::JS_TAG_NULL => out.push_str("null"),
            qjs::JS_TAG_BOOL => out.push_str(if qjs::JS_VALUE_GET_BOOL(value) {
                "true"
            } else {
                "false"
            }),
            qjs::JS_TAG_INT => push_integer(i64::from(qjs::JS_VALUE_GET_INT(value)), out),
            qjs::JS_TAG_FLOAT64 => {
                let f = qjs::JS_VALUE_GET_FLOAT64(value);
                if !f.is_finite() {
                    out.push_str("null");
                } else if f.fract() == 0.0 {
                    // JSON.stringify writes integral numbers as digits (shortest, padded with
                    // zeros up to 1e21), which the host reads as an integer: below 2^53 they are
                    // exact, so write the same digits (and -0 as 0); above, leave them to
                    // JSON.stringify.
                    if f.abs() >= 9_007_199_254_740_992.0 {
                        return false;
                    }
                    push_integer(f as i64, out);
                } else {
                    // Shortest round-trip text: parses back to the same f64, as
                    // JSON.stringify's does.
                    use std::fmt::Write;
                    let _ = write!(out, "{f:?}");
                }
            }
            qjs::JS_TAG_STRING => {
                if let Some(latin1) = patch::latin1(ctx, value, 0) {
                    append_latin1(latin1, out);
                    return true;
                }
                // 16-bit characters: QuickJS's UTF-8, which has lone surrogates as invalid UTF-8.
                let mut len: qjs::size_t = 0;
                let ptr = qjs::JS_ToCStringLen2(ctx, &mut len, value, false);
                return append_c_string(ctx, ptr, len, out);
            }
            _ => return false,
        }
    }
    true
}

/// Appends the C string QuickJS made (`len` bytes at `ptr`, or null after an exception) as a JSON
/// string, and frees it. `false` if there was none, or it is not UTF-8: lone surrogates come out
/// of QuickJS as invalid UTF-8, and are left to `JSON.stringify`.
///
/// # Safety
/// `ptr` is null or a C string of `ctx` with `len` bytes, not yet freed.
unsafe fn append_c_string(
    ctx: *mut qjs::JSContext,
    ptr: *const std::ffi::c_char,
    len: qjs::size_t,
    out: &mut String,
) -> bool {
    // SAFETY: as the caller promises; freed once read.
    unsafe {
        if ptr.is_null() {
            drop_exception(ctx);
            return false;
        }
        let bytes = std::slice::from_raw_parts(ptr.cast::<u8>(), len as usize);
        let valid = match std::str::from_utf8(bytes) {
            Ok(text) => {
                append_json_string(text, out);
                true
            }
            Err(_) => false,
        };
        qjs::JS_FreeCString(ctx, ptr);
        valid
    }
}

/// Appends `n`'s decimal digits: `core::fmt` costs several times more in the guest.
fn push_integer(n: i64, out: &mut String) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        out.push('-');
    }
    // SAFETY: only ASCII digits were written (checking costs as much as writing them).
    out.push_str(unsafe { std::str::from_utf8_unchecked(&digits[at..]) });
}

/// Appends a string of Latin-1 characters (QuickJS's 8-bit strings) as a JSON string literal.
fn append_latin1(text: &[u8], out: &mut String) {
    append_json_chars(text.iter().map(|&b| char::from(b)), text.len(), out);
}

/// Appends `text` as a JSON string literal.
pub(crate) fn append_json_string(text: &str, out: &mut String) {
    append_json_chars(text.chars(), text.len(), out);
}

/// Appends `chars` (about `len` bytes of UTF-8) as a JSON string literal.
fn append_json_chars(chars: impl Iterator<Item = char>, len: usize, out: &mut String) {
    use std::fmt::Write;
    out.reserve(len + 2);
    out.push('"');
    for c in chars {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
