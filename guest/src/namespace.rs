//! The `codemode` object. Every string property but the names JavaScript itself looks up
//! ([`PROTOCOL_ATOMS`]) is a tool function, made by the prelude's `makeTool` on first use and
//! kept; nothing can be assigned, defined or deleted on it, and it has no own keys and no
//! prototype. So `String(codemode)`, `await codemode` or `JSON.stringify(codemode)` call no
//! tool: `toString` gives `"[object codemode]"`, the other protocol names `undefined`.
//!
//! It is an object of a QuickJS class with exotic behaviour, not a `Proxy`: reading
//! `codemode.search` is one property lookup in C, where a proxy would call its `get` trap (a JS
//! frame, a `Map` lookup) and then check the trap's answer against its target — ~7% of a tool
//! call. Scripts are always strict, so a refused assignment or definition throws a `TypeError`.

use std::cell::Cell;

use javy::quickjs::qjs;

thread_local! {
    /// Tool functions made so far, keyed by name: a null-prototype object, owned here.
    static TOOLS: Cell<qjs::JSValue> = const { Cell::new(qjs::JS_UNDEFINED) };
    /// The prelude's `makeTool(name)`, owned here.
    static MAKE_TOOL: Cell<qjs::JSValue> = const { Cell::new(qjs::JS_UNDEFINED) };
    /// The atom of `inspect` (not one of QuickJS's own), made by `create`.
    static INSPECT: Cell<qjs::JSAtom> = const { Cell::new(0) };
}

/// Names JavaScript (or a console) looks up on any object by itself — conversions, promise
/// adoption, `JSON.stringify`, inspection: `then`, `toJSON`, `toString`, `toLocaleString`,
/// `valueOf`, `constructor`, `__proto__` (these atoms) and `inspect` ([`INSPECT`]). They are
/// never tool names (an upstream server's tool is named `server__tool`, so none is lost), and
/// reading them calls nothing.
const PROTOCOL_ATOMS: [u32; 7] = [
    qjs::JS_ATOM_then,
    qjs::JS_ATOM_toJSON,
    qjs::JS_ATOM_toString,
    qjs::JS_ATOM_toLocaleString,
    qjs::JS_ATOM_valueOf,
    qjs::JS_ATOM_constructor,
    qjs::JS_ATOM___proto__,
];

/// What `String(codemode)` gives.
const TO_STRING: &std::ffi::CStr = c"[object codemode]";

const REFUSED: &std::ffi::CStr =
    c"codemode's properties are the host's tools: they cannot be assigned, defined or deleted";

/// Whether `atom` names a tool: a string other than the protocol names ([`PROTOCOL_ATOMS`]).
///
/// # Safety
/// `ctx` is a live context and `atom` a live atom of it.
unsafe fn is_tool_name(ctx: *mut qjs::JSContext, atom: qjs::JSAtom) -> bool {
    if PROTOCOL_ATOMS.iter().any(|&a| a as qjs::JSAtom == atom) || atom == INSPECT.get() {
        return false;
    }
    // SAFETY: as the caller promises; the value is freed at once.
    unsafe {
        let key = qjs::JS_AtomToValue(ctx, atom);
        let symbol = qjs::JS_IsSymbol(key);
        qjs::JS_FreeValue(ctx, key);
        !symbol
    }
}

unsafe extern "C" fn get_property(
    ctx: *mut qjs::JSContext,
    _object: qjs::JSValue,
    atom: qjs::JSAtom,
    _receiver: qjs::JSValue,
) -> qjs::JSValue {
    // SAFETY: QuickJS calls this with a live context and atom; TOOLS and MAKE_TOOL are live
    // values owned by this module (set by `create` and `set_tool_maker` before any script runs).
    unsafe {
        let tools = TOOLS.get();
        let cached = qjs::JS_GetProperty(ctx, tools, atom);
        if !qjs::JS_IsUndefined(cached) || !is_tool_name(ctx, atom) {
            return cached;
        }
        let mut name = qjs::JS_AtomToValue(ctx, atom);
        let tool = qjs::JS_Call(ctx, MAKE_TOOL.get(), qjs::JS_UNDEFINED, 1, &mut name);
        qjs::JS_FreeValue(ctx, name);
        if qjs::JS_IsException(tool) {
            return tool;
        }
        // Kept for the next read; if even that fails (out of memory), the next read makes another.
        let kept = qjs::JS_DupValue(ctx, tool);
        if qjs::JS_DefinePropertyValue(ctx, tools, atom, kept, qjs::JS_PROP_C_W_E as i32) < 0 {
            qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx));
        }
        tool
    }
}

unsafe extern "C" fn has_property(
    ctx: *mut qjs::JSContext,
    _object: qjs::JSValue,
    atom: qjs::JSAtom,
) -> i32 {
    // SAFETY: QuickJS calls this with a live context and atom.
    i32::from(unsafe { is_tool_name(ctx, atom) })
}

/// Refuses a change: throws (scripts are strict) unless the caller asked for `false` instead
/// (`Reflect.set`, `Reflect.defineProperty`).
///
/// # Safety
/// `ctx` is a live context.
unsafe fn refuse(ctx: *mut qjs::JSContext, flags: i32) -> i32 {
    if flags & (qjs::JS_PROP_THROW | qjs::JS_PROP_THROW_STRICT) as i32 == 0 {
        return 0;
    }
    // SAFETY: a NUL-terminated message with no format directives.
    unsafe { qjs::JS_ThrowTypeError(ctx, REFUSED.as_ptr()) };
    -1
}

unsafe extern "C" fn set_property(
    ctx: *mut qjs::JSContext,
    _object: qjs::JSValue,
    _atom: qjs::JSAtom,
    _value: qjs::JSValue,
    _receiver: qjs::JSValue,
    flags: i32,
) -> i32 {
    // SAFETY: QuickJS calls this with a live context.
    unsafe { refuse(ctx, flags) }
}

unsafe extern "C" fn define_own_property(
    ctx: *mut qjs::JSContext,
    _object: qjs::JSValue,
    _atom: qjs::JSAtom,
    _value: qjs::JSValue,
    _getter: qjs::JSValue,
    _setter: qjs::JSValue,
    flags: i32,
) -> i32 {
    // SAFETY: QuickJS calls this with a live context.
    unsafe { refuse(ctx, flags) }
}

unsafe extern "C" fn delete_property(
    _ctx: *mut qjs::JSContext,
    _object: qjs::JSValue,
    _atom: qjs::JSAtom,
) -> i32 {
    // `false`: QuickJS throws "could not delete property" in strict code.
    0
}

/// Makes the `codemode` object (owned by the caller) and its tool cache. Call once per runtime,
/// before the prelude runs.
///
/// # Safety
/// `ctx` is a live context.
pub unsafe fn create(ctx: *mut qjs::JSContext) -> qjs::JSValue {
    // Leaked on purpose: QuickJS keeps pointers to the class definition for the runtime's life.
    let exotic = Box::leak(Box::new(qjs::JSClassExoticMethods {
        get_own_property: None,
        get_own_property_names: None,
        delete_property: Some(delete_property),
        define_own_property: Some(define_own_property),
        has_property: Some(has_property),
        get_property: Some(get_property),
        set_property: Some(set_property),
    }));
    let definition = Box::leak(Box::new(qjs::JSClassDef {
        class_name: c"codemode".as_ptr(),
        finalizer: None,
        gc_mark: None,
        call: None,
        exotic,
    }));
    // SAFETY: `ctx` is live; the class definition outlives the runtime (leaked above).
    unsafe {
        let rt = qjs::JS_GetRuntime(ctx);
        let mut id: qjs::JSClassID = 0;
        qjs::JS_NewClassID(rt, &mut id);
        if qjs::JS_NewClass(rt, id, definition) < 0 {
            return qjs::JS_EXCEPTION;
        }
        let tools = qjs::JS_NewObjectProto(ctx, qjs::JS_NULL);
        TOOLS.set(tools);
        INSPECT.set(qjs::JS_NewAtom(ctx, c"inspect".as_ptr()));
        // Read before any tool name (see `get_property`): `toString` and `Symbol.toStringTag`.
        let to_string = qjs::JS_NewCFunction2(
            ctx,
            Some(to_string),
            c"toString".as_ptr(),
            0,
            qjs::JSCFunctionEnum_JS_CFUNC_generic,
            0,
        );
        let tag = qjs::JS_NewStringLen(ctx, c"codemode".as_ptr(), 8);
        for (atom, value) in [
            (qjs::JS_ATOM_toString, to_string),
            (qjs::JS_ATOM_Symbol_toStringTag, tag),
        ] {
            if qjs::JS_IsException(value)
                || qjs::JS_DefinePropertyValue(ctx, tools, atom as qjs::JSAtom, value, 0) < 0
            {
                return qjs::JS_EXCEPTION;
            }
        }
        let object = qjs::JS_NewObjectProtoClass(ctx, qjs::JS_NULL, id);
        if !qjs::JS_IsException(object) {
            qjs::JS_PreventExtensions(ctx, object);
        }
        object
    }
}

/// `codemode.toString()`: `"[object codemode]"`.
unsafe extern "C" fn to_string(
    ctx: *mut qjs::JSContext,
    _this: qjs::JSValue,
    _argc: i32,
    _argv: *mut qjs::JSValue,
) -> qjs::JSValue {
    // SAFETY: QuickJS calls this with a live context; the string is NUL-terminated.
    unsafe { qjs::JS_NewStringLen(ctx, TO_STRING.as_ptr(), TO_STRING.count_bytes() as _) }
}

/// Keeps the prelude's `makeTool(name)`, which [`get_property`] calls for a tool's first use.
///
/// # Safety
/// `ctx` is a live context and `make_tool` a live function of it (this module takes a reference).
pub unsafe fn set_tool_maker(ctx: *mut qjs::JSContext, make_tool: qjs::JSValue) {
    // SAFETY: as the caller promises.
    MAKE_TOOL.set(unsafe { qjs::JS_DupValue(ctx, make_tool) });
}
