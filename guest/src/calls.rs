//! Tool calls on the guest's side: the tool functions `codemode.<name>` returns, starting a call,
//! and settling it when the host answers (`cm_resume`).
//!
//! A call is a promise with no resolving functions (`codemode_promise_new`, which
//! `guest/quickjs-wasi.patch` adds to QuickJS: the two function objects `JS_NewPromiseCapability`
//! makes would only ever be called from here). It waits here, under the call id the host gave,
//! until [`settle`] resolves it with the parsed result or rejects it with the error the prelude's
//! `rejection` makes (`codemode_promise_settle`, which does what the resolving functions would).
//! They are kept in Rust, not in the prelude, so that a call costs no executor closure, no map
//! entry object and no JS frame to settle.
//!
//! Each call keeps where the script made it (its [`Site`], found by walking QuickJS's stack to
//! the innermost frame of the user's code): the host gets it with the call, a rejection's
//! `stack` points at it, and a call whose promise nothing awaited is reported there when the
//! script ends.
//!
//! A tool function is a QuickJS C function ([`tool_function`]) holding the tool's name: arguments
//! that are a plain object of primitives are encoded and the call started right there, with no
//! JavaScript frame at all; any other arguments go to the prelude's `callEncoded`, which encodes
//! them with `JSON.stringify` and starts the call through `hostCall`. All of it works on raw
//! values: it runs in every call, and rquickjs's handles would cost a context reference count and
//! a type check per value.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::mem::ManuallyDrop;

use javy::quickjs::{Ctx, Function, Value, qjs};

use crate::abi;
use crate::patch::{
    codemode_call_site, codemode_promise_is_handled, codemode_promise_new, codemode_promise_settle,
};

/// Where a call was made: line and column in the compiled source (the wrapper's line included,
/// see [`set_line_offset`]); 0 for both when no frame of the user's code was on the stack.
#[derive(Clone, Copy)]
struct Site {
    line: u32,
    column: u32,
}

impl Site {
    /// The position in the user's code (0 when unknown).
    fn in_user_code(self) -> (u32, u32) {
        if self.line == 0 {
            return (0, 0);
        }
        (
            self.line.saturating_sub(LINE_OFFSET.get()).max(1),
            self.column,
        )
    }
}

/// A call the host has not settled yet: its id, its promise, the tool's name as the script wrote
/// it (for error messages) and where it was made. Owned raw values.
struct PendingCall {
    id: u32,
    promise: qjs::JSValue,
    name: qjs::JSValue,
    site: Site,
}

thread_local! {
    /// Calls the host has not settled yet, by id.
    ///
    /// `ManuallyDrop`: a thread-local that needs dropping registers its destructor on first use,
    /// which would cost every eval ~0.4 µs (the instance is discarded, never dropped).
    static PENDING: RefCell<ManuallyDrop<BTreeMap<u32, PendingCall>>> =
        const { RefCell::new(ManuallyDrop::new(BTreeMap::new())) };
    /// Settled calls that nothing had awaited when they settled (kept to check again when the
    /// script ends; a call awaited at once is never kept, so its result is not either).
    static UNAWAITED: RefCell<ManuallyDrop<Vec<PendingCall>>> =
        const { RefCell::new(ManuallyDrop::new(Vec::new())) };
    /// The atom of the user's code's file name (`script.js`), whose frames are call sites.
    static USER_FILE: Cell<qjs::JSAtom> = const { Cell::new(0) };
    /// Lines the wrapper put before the user's code in this run.
    static LINE_OFFSET: Cell<u32> = const { Cell::new(0) };
    /// The prelude's `rejection(name, json, line, column)` (owned).
    static REJECTION: Cell<qjs::JSValue> = const { Cell::new(qjs::JS_UNDEFINED) };
    /// The realm's original `Object.prototype` (owned; user code cannot replace it, only add to
    /// it), for [`crate::fast_json`] and the engine.
    static OBJECT_PROTOTYPE: Cell<qjs::JSValue> = const { Cell::new(qjs::JS_UNDEFINED) };
    /// The prelude's `callEncoded(name, hostName, args)` (owned).
    static CALL_ENCODED: Cell<qjs::JSValue> = const { Cell::new(qjs::JS_UNDEFINED) };
}

/// Makes the prelude's `hostCall(hostName, argsJson, name)` and `hostTool(name, hostName)`, and
/// keeps `Object.prototype` as it is at initialisation (before any user code).
pub fn entry_points<'js>(cx: &Ctx<'js>) -> javy::quickjs::Result<(Value<'js>, Value<'js>)> {
    let ctx = cx.as_raw().as_ptr();
    let object: javy::quickjs::Object = cx.globals().get("Object")?;
    let prototype: Value = object.get("prototype")?;
    // SAFETY: `ctx` is live; the prototype is kept with a reference of its own; the functions
    // are owned by the returned handles.
    unsafe {
        OBJECT_PROTOTYPE.set(qjs::JS_DupValue(ctx, prototype.as_raw()));
        // Never freed: the runtime lives as long as the instance.
        USER_FILE.set(qjs::JS_NewAtom(ctx, crate::engine::FILE_NAME.as_ptr()));
        let make = |f: unsafe extern "C" fn(
            *mut qjs::JSContext,
            qjs::JSValue,
            i32,
            *mut qjs::JSValue,
        ) -> qjs::JSValue,
                    name: &std::ffi::CStr| {
            let raw = qjs::JS_NewCFunction2(
                ctx,
                Some(f),
                name.as_ptr(),
                3,
                qjs::JSCFunctionEnum_JS_CFUNC_generic,
                0,
            );
            let value = Value::from_raw(cx.clone(), raw);
            if value.is_exception() {
                Err(javy::quickjs::Error::Exception)
            } else {
                Ok(value)
            }
        };
        Ok((make(host_call, c"hostCall")?, make(host_tool, c"hostTool")?))
    }
}

/// The realm's original `Object.prototype` (borrowed; kept by [`entry_points`]).
pub fn object_prototype() -> qjs::JSValue {
    OBJECT_PROTOTYPE.get()
}

/// Keeps the prelude's `callEncoded(name, hostName, args)`, which [`tool_function`] hands
/// arguments it does not encode itself, and its `rejection(name, json, line, column)`, which
/// makes the error a failed call rejects with.
pub fn set_prelude(cx: &Ctx<'_>, call_encoded: &Function<'_>, rejection: &Function<'_>) {
    let ctx = cx.as_raw().as_ptr();
    // SAFETY: live functions of a live context; this module keeps its own references.
    unsafe {
        CALL_ENCODED.set(qjs::JS_DupValue(ctx, call_encoded.as_raw()));
        REJECTION.set(qjs::JS_DupValue(ctx, rejection.as_raw()));
    }
}

/// Sets how many lines the wrapper put before the user's code in this run.
pub fn set_line_offset(lines: u32) {
    LINE_OFFSET.set(lines);
}

/// Where in the user's code the script is now: the innermost frame of its code.
///
/// # Safety
/// `ctx` is live.
unsafe fn call_site(ctx: *mut qjs::JSContext) -> Site {
    let mut column = 0;
    // SAFETY: as the caller promises; the helper only reads the stack.
    let line = unsafe { codemode_call_site(ctx, USER_FILE.get(), &mut column) };
    Site {
        line: u32::try_from(line).unwrap_or(0),
        column: u32::try_from(column).unwrap_or(0),
    }
}

/// The position in the user's code the script is at now (0 when unknown), for a warning.
pub fn current_position(cx: &Ctx<'_>) -> (u32, u32) {
    // SAFETY: the context is live.
    unsafe { call_site(cx.as_raw().as_ptr()) }.in_user_code()
}

/// The three arguments of a call from the prelude (it always passes three).
///
/// # Safety
/// `argv` holds `argc` live values.
unsafe fn arguments(argc: i32, argv: *mut qjs::JSValue) -> [qjs::JSValue; 3] {
    let mut out = [qjs::JS_UNDEFINED; 3];
    for (i, slot) in out.iter_mut().enumerate().take(argc.max(0) as usize) {
        // SAFETY: `i < argc`.
        *slot = unsafe { *argv.add(i) };
    }
    out
}

/// `hostCall(hostName, argsJson, name)`: starts a call whose arguments are already JSON text.
unsafe extern "C" fn host_call(
    ctx: *mut qjs::JSContext,
    _this: qjs::JSValue,
    argc: i32,
    argv: *mut qjs::JSValue,
) -> qjs::JSValue {
    // SAFETY: QuickJS passes a live context and `argc` live arguments; the C string is freed
    // after the call has copied it.
    unsafe {
        let [host_name, args, name] = arguments(argc, argv);
        let mut len: qjs::size_t = 0;
        let ptr = qjs::JS_ToCStringLen2(ctx, &mut len, args, false);
        if ptr.is_null() {
            return qjs::JS_EXCEPTION;
        }
        let promise = start(
            ctx,
            host_name,
            std::slice::from_raw_parts(ptr.cast::<u8>(), len as usize),
            name,
        );
        qjs::JS_FreeCString(ctx, ptr);
        promise
    }
}

/// `hostTool(name, hostName)`: the tool function for `name` (as the script wrote it; `hostName`
/// is the same with lone surrogates replaced): a [`tool_function`] holding both.
unsafe extern "C" fn host_tool(
    ctx: *mut qjs::JSContext,
    _this: qjs::JSValue,
    argc: i32,
    argv: *mut qjs::JSValue,
) -> qjs::JSValue {
    // SAFETY: QuickJS passes a live context and `argc` live arguments; JS_NewCFunctionData takes
    // its own references to the data.
    unsafe {
        let mut names = arguments(argc, argv);
        qjs::JS_NewCFunctionData(ctx, Some(tool_function), 1, 0, 2, names.as_mut_ptr())
    }
}

/// A tool function: `codemode.<name>(args)`. Returns the call's promise.
unsafe extern "C" fn tool_function(
    ctx: *mut qjs::JSContext,
    _this: qjs::JSValue,
    argc: i32,
    argv: *mut qjs::JSValue,
    _magic: i32,
    data: *mut qjs::JSValue,
) -> qjs::JSValue {
    // SAFETY: QuickJS passes a live context, `argc` live arguments and the two data values
    // `host_tool` gave; `callEncoded` is owned by this module.
    unsafe {
        let (name, host_name) = (*data, *data.add(1));
        let args = if argc > 0 { *argv } else { qjs::JS_UNDEFINED };
        if qjs::JS_VALUE_GET_NORM_TAG(args) == qjs::JS_TAG_UNDEFINED {
            return start(ctx, host_name, b"{}", name);
        }
        if let Some(json) = crate::fast_json::plain_object(ctx, args) {
            return start(ctx, host_name, json.as_bytes(), name);
        }
        let mut call = [name, host_name, args];
        qjs::JS_Call(
            ctx,
            CALL_ENCODED.get(),
            qjs::JS_UNDEFINED,
            3,
            call.as_mut_ptr(),
        )
    }
}

/// Makes the call's promise, starts the call in the host and keeps the promise. A name or
/// arguments past the host's limits reject the promise at once: the script can catch that.
///
/// # Safety
/// `ctx` is live; `host_name` and `name` are live values of it (borrowed).
unsafe fn start(
    ctx: *mut qjs::JSContext,
    host_name: qjs::JSValue,
    args_json: &[u8],
    name: qjs::JSValue,
) -> qjs::JSValue {
    // SAFETY: as the caller promises. The promise first: if it cannot be made (out of memory),
    // no call is started either. An ASCII name is read in place (its bytes are its UTF-8);
    // any other is converted, and the host checks that the bytes are UTF-8.
    unsafe {
        let site = call_site(ctx);
        let promise = codemode_promise_new(ctx);
        if qjs::JS_IsException(promise) {
            return promise;
        }
        let call = PendingCall {
            id: 0,
            promise: qjs::JS_DupValue(ctx, promise),
            name: qjs::JS_DupValue(ctx, name),
            site,
        };
        let ascii = crate::patch::latin1(ctx, host_name, 0).filter(|name| name.is_ascii());
        let (bytes, converted) = match ascii {
            Some(bytes) => (bytes, std::ptr::null()),
            None => {
                let mut len: qjs::size_t = 0;
                let ptr = qjs::JS_ToCStringLen2(ctx, &mut len, host_name, false);
                if ptr.is_null() {
                    finish(ctx, call, qjs::JS_UNDEFINED, true);
                    qjs::JS_FreeValue(ctx, promise);
                    return qjs::JS_EXCEPTION;
                }
                (
                    std::slice::from_raw_parts(ptr.cast::<u8>(), len as usize),
                    ptr,
                )
            }
        };
        let refused = if bytes.len() > abi::MAX_TOOL_NAME_BYTES {
            Some(format!(
                r#"{{"type":"not_found","message":"unknown tool: its name is {} bytes long, more than the {}-byte limit of a tool name"}}"#,
                bytes.len(),
                abi::MAX_TOOL_NAME_BYTES
            ))
        } else if args_json.len() > abi::MAX_TOOL_ARGS_BYTES {
            Some(format!(
                r#"{{"type":"failed","message":"the arguments are {} bytes of JSON, more than the {}-byte limit of a tool call","data":null}}"#,
                args_json.len(),
                abi::MAX_TOOL_ARGS_BYTES
            ))
        } else {
            None
        };
        let id = match refused {
            None => abi::call_start(bytes, args_json, site.in_user_code()),
            Some(_) => 0,
        };
        if !converted.is_null() {
            qjs::JS_FreeCString(ctx, converted);
        }
        match refused {
            None => {
                PENDING.with(|pending| pending.borrow_mut().insert(id, PendingCall { id, ..call }));
            }
            Some(description) => reject(ctx, call, &description),
        }
        promise
    }
}

/// Rejects `call`'s promise with what the prelude's `rejection` makes of `description`.
///
/// # Safety
/// `ctx` is live; `call`'s values are owned values of it.
unsafe fn reject(ctx: *mut qjs::JSContext, call: PendingCall, description: &str) {
    // SAFETY: as the caller promises; every value made here is freed once used.
    unsafe {
        let json = qjs::JS_NewStringLen(ctx, description.as_ptr().cast(), description.len() as _);
        let mut args = [
            call.name,
            json,
            qjs::JS_MKVAL(qjs::JS_TAG_INT, call.site.line as i32),
            qjs::JS_MKVAL(qjs::JS_TAG_INT, call.site.column as i32),
        ];
        let mut reason = qjs::JS_Call(
            ctx,
            REJECTION.get(),
            qjs::JS_UNDEFINED,
            4,
            args.as_mut_ptr(),
        );
        qjs::JS_FreeValue(ctx, json);
        if qjs::JS_IsException(reason) {
            reason = qjs::JS_GetException(ctx);
        }
        finish(ctx, call, reason, true);
    }
}

/// Calls the host has not settled yet.
pub fn outstanding() -> usize {
    PENDING.with(|pending| pending.borrow().len())
}

/// Settles call `id`: resolves its promise with the parsed JSON value, or rejects it with what
/// the prelude's `rejection` makes of the host's description (also when a result is not JSON,
/// which a correct host never sends). An id the guest does not know (a misbehaving host)
/// settles nothing.
pub fn settle(cx: &Ctx<'_>, id: u32, ok: bool, payload: Vec<u8>) {
    let Some(call) = PENDING.with(|pending| pending.borrow_mut().remove(&id)) else {
        return;
    };
    let ctx = cx.as_raw().as_ptr();
    // SAFETY: the call's values are owned; the kept copy takes references of its own.
    unsafe {
        if codemode_promise_is_handled(ctx, call.promise) == 0 {
            UNAWAITED.with(|kept| {
                kept.borrow_mut().push(PendingCall {
                    promise: qjs::JS_DupValue(ctx, call.promise),
                    name: qjs::JS_DupValue(ctx, call.name),
                    ..call
                })
            });
        }
    }
    if let Some(value) = ok.then(|| literal(&payload)).flatten() {
        // SAFETY: the call's values are owned, and freed once used.
        unsafe { finish(ctx, call, value, false) };
        return;
    }
    // The host sends UTF-8 JSON; a lossy conversion can only change invalid bytes.
    let mut text = match String::from_utf8(payload) {
        Ok(text) => text.into_bytes(),
        Err(e) => String::from_utf8_lossy(e.as_bytes())
            .into_owned()
            .into_bytes(),
    };
    let json_len = text.len();
    // `cm_alloc` left room for it.
    text.push(0);
    // SAFETY: `text` is NUL-terminated after `json_len` bytes, as JS_ParseJSON requires; every
    // value made here, and the call's, are freed once used.
    unsafe {
        let parsed = if ok {
            qjs::JS_ParseJSON(
                ctx,
                text.as_ptr().cast(),
                json_len as _,
                c"<tool result>".as_ptr(),
            )
        } else {
            qjs::JS_EXCEPTION
        };
        if !qjs::JS_IsException(parsed) {
            finish(ctx, call, parsed, false);
            return;
        }
        if ok {
            // `rejection` parses it again and describes the syntax error.
            qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx));
        }
        let json = String::from_utf8_lossy(&text[..json_len]);
        reject(ctx, call, &json);
    }
}

/// The calls whose promise nothing ever awaited (nor chained, nor returned), in order of start:
/// the tool's name and where in the user's code the call was made. Settled calls kept by
/// [`settle`] and calls still in flight are both looked at.
pub fn unawaited(cx: &Ctx<'_>) -> Vec<(String, (u32, u32))> {
    let ctx = cx.as_raw().as_ptr();
    let mut found: Vec<(u32, String, (u32, u32))> = Vec::new();
    let mut look = |call: &PendingCall| {
        // SAFETY: the call's values are live (owned by this module); the name is read into a
        // Rust string and the C string freed.
        unsafe {
            if codemode_promise_is_handled(ctx, call.promise) != 0 {
                return;
            }
            // Only a string is read: converting anything else could run a script's `toString`
            // while the calls are borrowed here. The name is always the script's property
            // name, a string; the check keeps it so.
            if !qjs::JS_IsString(call.name) {
                found.push((call.id, String::new(), call.site.in_user_code()));
                return;
            }
            let mut len: qjs::size_t = 0;
            let ptr = qjs::JS_ToCStringLen2(ctx, &mut len, call.name, false);
            let name = if ptr.is_null() {
                qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx));
                String::new()
            } else {
                let name = String::from_utf8_lossy(std::slice::from_raw_parts(
                    ptr.cast::<u8>(),
                    len as usize,
                ))
                .into_owned();
                qjs::JS_FreeCString(ctx, ptr);
                name
            };
            found.push((call.id, name, call.site.in_user_code()));
        }
    };
    UNAWAITED.with(|kept| kept.borrow().iter().for_each(&mut look));
    PENDING.with(|pending| pending.borrow().values().for_each(&mut look));
    found.sort_by_key(|(id, ..)| *id);
    found
        .into_iter()
        .map(|(_, name, site)| (name, site))
        .collect()
}

/// The value of a result that is a JSON literal the guest reads without QuickJS's parser:
/// `null`, `true`, `false`, or an integer of up to 9 digits (a no-op tool's answer costs
/// as much to parse as the rest of its call).
fn literal(json: &[u8]) -> Option<qjs::JSValue> {
    match json {
        b"null" => Some(qjs::JS_NULL),
        b"true" => Some(qjs::JS_TRUE),
        b"false" => Some(qjs::JS_FALSE),
        _ => {
            let (negative, digits) = match json {
                [b'-', rest @ ..] => (true, rest),
                _ => (false, json),
            };
            let well_formed = matches!(digits, [b'0'] | [b'1'..=b'9', ..]) && digits.len() <= 9;
            if !well_formed
                || !digits.iter().all(u8::is_ascii_digit)
                || (negative && digits == b"0")
            {
                return None; // -0 is a float: left to the parser
            }
            let magnitude = digits
                .iter()
                .fold(0i32, |n, d| n * 10 + i32::from(d - b'0'));
            // `JS_MKVAL` is public in rquickjs-sys: an integer is its tag and its bits.
            Some(qjs::JS_MKVAL(
                qjs::JS_TAG_INT,
                if negative { -magnitude } else { magnitude },
            ))
        }
    }
}

/// Resolves (or, with `is_reject`, rejects) `call`'s promise with `value`, then frees `value`
/// and the call's values.
///
/// # Safety
/// `ctx` is live; `call`'s values and `value` are owned values of it.
unsafe fn finish(
    ctx: *mut qjs::JSContext,
    call: PendingCall,
    value: qjs::JSValue,
    is_reject: bool,
) {
    // SAFETY: as the caller promises; each value is freed once. Settling may run a `then`
    // getter of the value (a thenable is adopted); what it throws rejects the promise.
    unsafe {
        codemode_promise_settle(ctx, call.promise, value, i32::from(is_reject));
        for value in [value, call.promise, call.name] {
            qjs::JS_FreeValue(ctx, value);
        }
    }
}
