//! JSON text for the common shape of tool arguments — a plain object of numbers, booleans,
//! `null` and strings — without running `JSON.stringify` (~2 µs of QuickJS per call). Anything
//! that `JSON.stringify` could treat differently (a `toJSON`, a getter, a proxy, another
//! prototype or class, nested values, keys or strings that are not plain UTF-8) is declined, and
//! the prelude's `toJson` encodes it as before. The host parses what it receives, so only the
//! parsed value must match `JSON.stringify`'s, not the text.
//!
//! It works on raw QuickJS values: it runs in every tool call, and rquickjs's handles cost a
//! context reference count and a type check each.

use javy::quickjs::{qjs, Value};

/// Frees the pending exception (this module declines rather than throws).
///
/// # Safety
/// `ctx` is a live context.
unsafe fn drop_exception(ctx: *mut qjs::JSContext) {
    // SAFETY: as the caller promises; the exception is owned and freed.
    unsafe { qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx)) };
}

/// The JSON text of `value` when it is a plain object of primitives; `None` to leave it to
/// `JSON.stringify`. `object_prototype` is the realm's original `Object.prototype`.
///
/// # Safety
/// `ctx` is a live context; `value` and `object_prototype` are live values of it (borrowed).
pub unsafe fn plain_object(ctx: *mut qjs::JSContext, value: qjs::JSValue, object_prototype: qjs::JSValue) -> Option<String> {
    // SAFETY: as the caller promises; the prototype (a new reference) and the property table
    // are freed below.
    unsafe {
        if qjs::JS_VALUE_GET_TAG(value) != qjs::JS_TAG_OBJECT {
            return None;
        }
        // Same class as Object.prototype (an ordinary object: not a function, an array, a proxy,
        // a boxed primitive…).
        if qjs::JS_GetClassID(value) != qjs::JS_GetClassID(object_prototype) {
            return None;
        }
        let proto = qjs::JS_GetPrototype(ctx, value);
        let same_proto = proto == object_prototype;
        qjs::JS_FreeValue(ctx, proto);
        if !same_proto {
            return None;
        }
        match qjs::JS_HasProperty(ctx, object_prototype, qjs::JS_ATOM_toJSON as qjs::JSAtom) {
            0 => {}
            found => {
                if found < 0 {
                    drop_exception(ctx);
                }
                return None;
            }
        }
        let mut table: *mut qjs::JSPropertyEnum = std::ptr::null_mut();
        let mut len: u32 = 0;
        let flags = (qjs::JS_GPN_STRING_MASK | qjs::JS_GPN_ENUM_ONLY) as i32;
        if qjs::JS_GetOwnPropertyNames(ctx, &mut table, &mut len, value, flags) < 0 {
            drop_exception(ctx);
            return None;
        }
        let mut json = String::with_capacity(16 * len as usize + 2);
        json.push('{');
        let mut complete = true;
        let mut first = true;
        for i in 0..len as usize {
            let atom = (*table.add(i)).atom;
            if !append_property(ctx, value, atom, &mut json, &mut first) {
                complete = false;
                break;
            }
        }
        qjs::JS_FreePropertyEnum(ctx, table, len);
        json.push('}');
        complete.then_some(json)
    }
}

/// Appends `"key":value` for one own property, or nothing for an `undefined` value (which
/// `JSON.stringify` omits). `false` when the property is not one this module encodes (`json` is
/// then left half-written, for the caller to drop).
///
/// # Safety
/// `object` is a live object of `ctx` and `atom` one of its own property keys.
unsafe fn append_property(ctx: *mut qjs::JSContext, object: qjs::JSValue, atom: qjs::JSAtom, json: &mut String, first: &mut bool) -> bool {
    // SAFETY: as the caller promises; the descriptor's three values are owned and freed.
    unsafe {
        let mut desc = qjs::JSPropertyDescriptor {
            flags: 0,
            value: qjs::JS_UNDEFINED,
            getter: qjs::JS_UNDEFINED,
            setter: qjs::JS_UNDEFINED,
        };
        if qjs::JS_GetOwnProperty(ctx, &mut desc, object, atom) != 1 {
            drop_exception(ctx);
            return false;
        }
        qjs::JS_FreeValue(ctx, desc.getter);
        qjs::JS_FreeValue(ctx, desc.setter);
        let value = desc.value;
        let appended = append_data_property(ctx, desc.flags, value, atom, json, first);
        qjs::JS_FreeValue(ctx, value);
        appended
    }
}

/// [`append_property`] once the descriptor is read.
///
/// # Safety
/// As [`append_property`]; `value` is live (borrowed).
unsafe fn append_data_property(
    ctx: *mut qjs::JSContext,
    flags: i32,
    value: qjs::JSValue,
    atom: qjs::JSAtom,
    json: &mut String,
    first: &mut bool,
) -> bool {
    if flags & qjs::JS_PROP_GETSET as i32 != 0 {
        return false;
    }
    // SAFETY: reading a live value's tag.
    if unsafe { qjs::JS_VALUE_GET_NORM_TAG(value) } == qjs::JS_TAG_UNDEFINED {
        return true;
    }
    if atom == qjs::JS_ATOM_toJSON as qjs::JSAtom {
        return false;
    }
    if !*first {
        json.push(',');
    }
    *first = false;
    // SAFETY: `atom` is live.
    unsafe {
        let mut key_len: qjs::size_t = 0;
        let key_ptr = qjs::JS_AtomToCStringLen(ctx, &mut key_len, atom);
        if !append_c_string(ctx, key_ptr, key_len, json) {
            return false;
        }
    }
    json.push(':');
    // On `false` the caller drops the whole text.
    // SAFETY: as the caller promises.
    unsafe { append_primitive(ctx, value, json) }
}

/// A primitive's JSON text — `null`, booleans, numbers (integers below 2^53 as integers, like
/// `JSON.stringify`; non-finite ones as `null`) and strings that are valid UTF-8 — parsing to
/// the same value as `JSON.stringify`'s text. `None` for anything else. Also encodes results.
pub fn primitive(value: &Value<'_>) -> Option<String> {
    let mut out = String::new();
    // SAFETY: a live value of a live context.
    unsafe { append_primitive(value.ctx().as_raw().as_ptr(), value.as_raw(), &mut out) }.then_some(out)
}

/// [`primitive`], appended to `out`; `false` for anything else (`out` may then hold part of a
/// string, for the caller to drop).
///
/// # Safety
/// `value` is a live value of `ctx` (borrowed).
unsafe fn append_primitive(ctx: *mut qjs::JSContext, value: qjs::JSValue, out: &mut String) -> bool {
    // SAFETY: as the caller promises; one tag read, then the payload of that tag.
    unsafe {
        match qjs::JS_VALUE_GET_NORM_TAG(value) {
            qjs::JS_TAG_NULL => out.push_str("null"),
            qjs::JS_TAG_BOOL => out.push_str(if qjs::JS_VALUE_GET_BOOL(value) { "true" } else { "false" }),
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
                    // Shortest round-trip text: parses back to the same f64, as JSON.stringify's does.
                    use std::fmt::Write;
                    let _ = write!(out, "{f:?}");
                }
            }
            qjs::JS_TAG_STRING => {
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
unsafe fn append_c_string(ctx: *mut qjs::JSContext, ptr: *const std::ffi::c_char, len: qjs::size_t, out: &mut String) -> bool {
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
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
}

/// Appends `text` as a JSON string literal.
fn append_json_string(text: &str, out: &mut String) {
    use std::fmt::Write;
    out.reserve(text.len() + 2);
    out.push('"');
    for c in text.chars() {
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
