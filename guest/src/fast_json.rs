//! JSON text for the common shape of tool arguments — a plain object of numbers, booleans,
//! `null` and strings — without running `JSON.stringify` (~2 µs of QuickJS per call). Anything
//! that `JSON.stringify` could treat differently (a `toJSON`, a getter, a proxy, another
//! prototype or class, nested values, keys or strings that are not plain UTF-8) is declined, and
//! the prelude's `toJson` encodes it as before. The host parses what it receives, so only the
//! parsed value must match `JSON.stringify`'s, not the text.

use javy::quickjs::{atom::PredefinedAtom, qjs, Ctx, Object, Value};

/// The JSON text of `value` when it is a plain object of primitives; `None` to leave it to
/// `JSON.stringify`. `object_prototype` is the realm's original `Object.prototype`.
pub fn plain_object<'js>(cx: &Ctx<'js>, value: &Value<'js>, object_prototype: &Object<'js>) -> Option<String> {
    // Functions, arrays, proxies and the rest have other classes than Object.prototype (below).
    value.as_object()?;
    let ctx = cx.as_raw().as_ptr();
    let raw = value.as_raw();
    let proto_raw = object_prototype.as_raw();
    // SAFETY: `raw` and `proto_raw` are live objects of this context; every value returned with
    // a reference (the prototype, descriptors' values) is wrapped so that it is freed on drop;
    // the property table and C strings are freed below.
    unsafe {
        // Same class as Object.prototype (an ordinary object: not a proxy, a boxed primitive…).
        if qjs::JS_GetClassID(raw) != qjs::JS_GetClassID(proto_raw) {
            return None;
        }
        let proto = Value::from_raw(cx.clone(), qjs::JS_GetPrototype(ctx, raw));
        if proto.as_raw() != proto_raw || object_prototype.contains_key(PredefinedAtom::ToJSON).unwrap_or(true) {
            return None;
        }
        let mut table: *mut qjs::JSPropertyEnum = std::ptr::null_mut();
        let mut len: u32 = 0;
        let flags = (qjs::JS_GPN_STRING_MASK | qjs::JS_GPN_ENUM_ONLY) as i32;
        if qjs::JS_GetOwnPropertyNames(ctx, &mut table, &mut len, raw, flags) < 0 {
            drop(cx.catch());
            return None;
        }
        let mut json = String::with_capacity(16 * len as usize + 2);
        json.push('{');
        let mut complete = true;
        let mut first = true;
        for i in 0..len as usize {
            let atom = (*table.add(i)).atom;
            if !append_property(cx, raw, atom, &mut json, &mut first) {
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
/// `object` is a live object of `cx`'s context and `atom` one of its own property keys.
unsafe fn append_property(cx: &Ctx<'_>, object: qjs::JSValue, atom: qjs::JSAtom, json: &mut String, first: &mut bool) -> bool {
    let ctx = cx.as_raw().as_ptr();
    // SAFETY: as the caller promises; the descriptor's three values are owned and wrapped.
    let (flags, value) = unsafe {
        let mut desc = qjs::JSPropertyDescriptor {
            flags: 0,
            value: qjs::JS_UNDEFINED,
            getter: qjs::JS_UNDEFINED,
            setter: qjs::JS_UNDEFINED,
        };
        if qjs::JS_GetOwnProperty(ctx, &mut desc, object, atom) != 1 {
            drop(cx.catch());
            return false;
        }
        drop(Value::from_raw(cx.clone(), desc.getter));
        drop(Value::from_raw(cx.clone(), desc.setter));
        (desc.flags, Value::from_raw(cx.clone(), desc.value))
    };
    if flags & qjs::JS_PROP_GETSET as i32 != 0 {
        return false;
    }
    if value.is_undefined() {
        return true;
    }
    if atom == qjs::JS_ATOM_toJSON as qjs::JSAtom {
        return false;
    }
    if !*first {
        json.push(',');
    }
    *first = false;
    // SAFETY: `atom` is live; the C string is freed right after it is written out.
    unsafe {
        let mut key_len: qjs::size_t = 0;
        let key_ptr = qjs::JS_AtomToCStringLen(ctx, &mut key_len, atom);
        if key_ptr.is_null() {
            drop(cx.catch());
            return false;
        }
        let bytes = std::slice::from_raw_parts(key_ptr.cast::<u8>(), key_len as usize);
        // Lone surrogates come out of QuickJS as invalid UTF-8: leave those to the prelude.
        let written = match std::str::from_utf8(bytes) {
            Ok(key) => {
                append_json_string(key, json);
                true
            }
            Err(_) => false,
        };
        qjs::JS_FreeCString(ctx, key_ptr);
        if !written {
            return false;
        }
    }
    json.push(':');
    // On `false` the caller drops the whole text.
    append_primitive(&value, json)
}

/// A primitive's JSON text — `null`, booleans, numbers (integers below 2^53 as integers, like
/// `JSON.stringify`; non-finite ones as `null`) and strings that are valid UTF-8 — parsing to
/// the same value as `JSON.stringify`'s text. `None` for anything else. Also encodes results.
pub fn primitive(value: &Value<'_>) -> Option<String> {
    let mut out = String::new();
    append_primitive(value, &mut out).then_some(out)
}

/// [`primitive`], appended to `out`; `false` (and `out` unchanged) for anything else.
fn append_primitive(value: &Value<'_>, out: &mut String) -> bool {
    // SAFETY: reading a live value's tag. One read, rather than rquickjs's `as_*` in turn (each
    // works out the value's type again, calling into QuickJS for objects).
    let tag = unsafe { qjs::JS_VALUE_GET_NORM_TAG(value.as_raw()) };
    match tag {
        qjs::JS_TAG_NULL => out.push_str("null"),
        qjs::JS_TAG_BOOL => out.push_str(if value.as_bool() == Some(true) { "true" } else { "false" }),
        qjs::JS_TAG_INT => push_integer(value.as_int().map_or(0, i64::from), out),
        qjs::JS_TAG_FLOAT64 => {
            let Some(f) = value.as_float() else {
                return false;
            };
            if !f.is_finite() {
                out.push_str("null");
            } else if f.fract() == 0.0 {
                // JSON.stringify writes integral numbers as digits (shortest, padded with zeros
                // up to 1e21), which the host reads as an integer: below 2^53 they are exact, so
                // write the same digits (and -0 as 0); above, leave them to JSON.stringify.
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
            // rquickjs fails on strings that are not valid UTF-8 (lone surrogates).
            let Some(Ok(text)) = value.as_string().map(|s| s.to_string()) else {
                return false;
            };
            append_json_string(&text, out);
        }
        _ => return false,
    }
    true
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
