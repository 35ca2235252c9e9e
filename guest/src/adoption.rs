//! Whether adopting one of the guest's own promises can run script code.
//!
//! Resolving a promise with another (what an async script's result takes) looks up the other
//! promise's `then`; the built-in `then` looks up that promise's `constructor` and the
//! constructor's `Symbol.species`. A script can replace each of the three, and its replacement
//! runs in those jobs. While all three are the built-ins kept at initialisation, adopting a
//! promise no script could reach (one with no own properties) runs nothing a script wrote, and
//! [`crate::engine`] may skip the jobs when their outcome is already known.

use std::cell::Cell;
use std::mem::MaybeUninit;

use javy::quickjs::{Ctx, Object, Value, qjs};

/// `Promise.prototype`, `Promise`, `Promise.prototype.then` and the getter of
/// `Promise[Symbol.species]` at initialisation: owned, kept for the instance's life.
#[derive(Clone, Copy)]
struct BuiltIns {
    prototype: qjs::JSValue,
    promise: qjs::JSValue,
    then: qjs::JSValue,
    species: qjs::JSValue,
}

thread_local! {
    static BUILT_INS: Cell<Option<BuiltIns>> = const { Cell::new(None) };
}

/// Keeps the built-ins [`runs_no_script`] compares with; called before any user code runs.
pub fn keep(cx: &Ctx<'_>) -> javy::quickjs::Result<()> {
    let ctx = cx.as_raw().as_ptr();
    let promise: Object = cx.globals().get("Promise")?;
    let prototype: Object = promise.get("prototype")?;
    let then: Value = prototype.get("then")?;
    // SAFETY: `ctx` is live; the values are dup'd and owned here (never freed: the runtime lives
    // as long as the instance).
    unsafe {
        let Some(species) = own(ctx, promise.as_raw(), qjs::JS_ATOM_Symbol_species, true) else {
            return Err(javy::quickjs::Error::Unknown);
        };
        BUILT_INS.set(Some(BuiltIns {
            prototype: qjs::JS_DupValue(ctx, prototype.as_raw()),
            promise: qjs::JS_DupValue(ctx, promise.as_raw()),
            then: qjs::JS_DupValue(ctx, then.as_raw()),
            species,
        }));
    }
    Ok(())
}

/// Whether `Promise.prototype.then`, `Promise.prototype.constructor` and
/// `Promise[Symbol.species]` are still the built-ins: own properties of the same kind with the
/// same values. Reads descriptors only (no getter runs).
pub fn runs_no_script(cx: &Ctx<'_>) -> bool {
    let Some(b) = BUILT_INS.get() else {
        return false;
    };
    let ctx = cx.as_raw().as_ptr();
    // SAFETY: `ctx` is live and the kept values are owned by this module.
    unsafe {
        is(ctx, b.prototype, qjs::JS_ATOM_then, false, b.then)
            && is(ctx, b.prototype, qjs::JS_ATOM_constructor, false, b.promise)
            && is(ctx, b.promise, qjs::JS_ATOM_Symbol_species, true, b.species)
    }
}

/// Whether `obj` has an own property `atom` of the kind `accessor` names (an accessor when
/// true, a data property when false) whose getter or value is `expected`.
///
/// # Safety
/// `ctx` is live; `obj` and `expected` are values of it.
unsafe fn is(
    ctx: *mut qjs::JSContext,
    obj: qjs::JSValue,
    atom: qjs::JSAtom,
    accessor: bool,
    expected: qjs::JSValue,
) -> bool {
    // SAFETY: as the caller's; `found` is owned and freed here.
    unsafe {
        match own(ctx, obj, atom, accessor) {
            Some(found) => {
                let same = qjs::JS_IsStrictEqual(ctx, found, expected);
                qjs::JS_FreeValue(ctx, found);
                same
            }
            None => false,
        }
    }
}

/// `obj`'s own property `atom`: its getter when it is an accessor and `accessor`, its value
/// when it is a data property and not `accessor` (owned); else `None` (an exception, which
/// only running out of memory could cause, is cleared).
///
/// # Safety
/// `ctx` is live; `obj` is a value of it.
unsafe fn own(
    ctx: *mut qjs::JSContext,
    obj: qjs::JSValue,
    atom: qjs::JSAtom,
    accessor: bool,
) -> Option<qjs::JSValue> {
    let mut desc = MaybeUninit::<qjs::JSPropertyDescriptor>::uninit();
    // SAFETY: as the caller's; on 1 QuickJS filled the descriptor, whose three values are owned
    // and each either returned or freed here.
    unsafe {
        match qjs::JS_GetOwnProperty(ctx, desc.as_mut_ptr(), obj, atom) {
            1 => {
                let desc = desc.assume_init();
                let is_accessor = desc.flags & qjs::JS_PROP_GETSET as i32 != 0;
                qjs::JS_FreeValue(ctx, desc.setter);
                let (kept, dropped) = if is_accessor {
                    (desc.getter, desc.value)
                } else {
                    (desc.value, desc.getter)
                };
                qjs::JS_FreeValue(ctx, dropped);
                if is_accessor == accessor {
                    Some(kept)
                } else {
                    qjs::JS_FreeValue(ctx, kept);
                    None
                }
            }
            0 => None,
            _ => {
                qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx));
                None
            }
        }
    }
}
