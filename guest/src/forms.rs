//! How the code is compiled — as a plain script, with top-level `await`, or as the body of an
//! async function (top-level `return`) — and how each form's completion becomes the result;
//! guest/ABI.md ("Code forms") says what each means for a script.

use javy::quickjs::{Ctx, Object, Value, qjs};

use crate::engine::{FILE_NAME, Prelude, call_internal, eval_raw, finish_ok, job_pending};

const COMPILE: i32 =
    (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_STRICT | qjs::JS_EVAL_FLAG_COMPILE_ONLY) as i32;
const ASYNC: i32 = qjs::JS_EVAL_FLAG_ASYNC as i32;

/// Mode numbers understood by the prelude's `start`.
/// 1: the value is the promise of an async script (`{ value: completion }`).
const MODE_ASYNC: i32 = 1;
/// 2: the value is a plain script's completion value.
const MODE_VALUE: i32 = 2;
/// 3: the value was thrown by a plain script.
const MODE_THROWN: i32 = 3;
/// 4: the value is the promise the async-function wrapper returned when called.
const MODE_CALLED: i32 = 4;

/// How the code was compiled.
pub enum Form {
    /// A script with top-level `await` (or the async-function wrapper): its completion is a
    /// promise.
    Async,
    /// A plain script (no `await` in the source): its completion value is the value itself.
    Plain,
    /// The async-function wrapper around code with top-level `return` and no `await`, compiled
    /// as a plain script: its completion value is the wrapper, which [`run_body`] calls.
    Body,
}

/// Whether the source could need top-level `await`: it holds `await`, or a `\u` escape (an
/// escaped `await` is a reserved word in an async script but an identifier in a plain one).
fn may_await(code: &[u8]) -> bool {
    code.windows(5).any(|w| w == b"await") || code.windows(2).any(|w| w == b"\\u")
}

/// Compiles the code. Without `await` in the source, as a plain (synchronous) script: the same
/// program, minus the promise and jobs an async script costs. Otherwise as a script with
/// top-level `await` (its completion value is the result; a function value, e.g.
/// `async () => {...}`, is called and awaited by the prelude). Either way, when it uses
/// top-level `return`, as the body of an async function instead. Nothing runs until it compiles.
pub fn compile<'js>(
    cx: &Ctx<'js>,
    code: &[u8],
) -> Result<(Value<'js>, Form, i32), (Value<'js>, i32)> {
    let form = if may_await(code) {
        Form::Async
    } else {
        Form::Plain
    };
    let flags = match form {
        Form::Plain => COMPILE,
        Form::Async | Form::Body => COMPILE | ASYNC,
    };
    let script_error = match eval_raw(cx, code, FILE_NAME, flags) {
        Ok(f) => return Ok((f, form, 0)),
        Err(e) => e,
    };
    let is_return = script_error
        .as_object()
        .and_then(|o| o.get::<_, String>("message").ok())
        .is_some_and(|m| m.contains("return not in a function"));
    if !is_return {
        return Err((script_error, 0));
    }
    // A declaration, not a parenthesised function expression: QuickJS keeps exact positions
    // inside declarations. The script's completion value is the function, which `start` calls
    // (or, with no `await` to compile, `run_body`: the top level then needs no promise).
    let wrapped = [
        b"async function codemode_main() {\n".as_slice(),
        code,
        b"\n}\ncodemode_main",
    ]
    .concat();
    let (flags, form) = match form {
        Form::Plain => (COMPILE, Form::Body),
        _ => (COMPILE | ASYNC, Form::Async),
    };
    match eval_raw(cx, &wrapped, FILE_NAME, flags) {
        Ok(f) => Ok((f, form, 1)),
        Err(e) => Err((e, 1)),
    }
}

/// Calls the async-function wrapper (`wrapper`, the completion value of [`Form::Body`]) as the
/// prelude's `start` would have in its first job: no user code ran before it and none is queued,
/// so calling it now runs the body at the same point relative to every job the body queues. A
/// body that ended with a primitive, queued no job and left the promise built-ins alone ends the
/// eval at once (the jobs that adopt its promise could run nothing of the script's); otherwise
/// the prelude adopts the wrapper's promise, in the jobs an async script's result takes.
///
/// Code can close the wrapper's body early (`return 1 }\n…\n{`): what it writes after that runs
/// at the top level, before the call, where it can queue jobs, give `Object.prototype` a `then`
/// (the async form's completion record would be adopted through it) or replace the completion
/// value. Unless the value is an async function (its promise is the engine's own, out of the
/// script's reach) and neither happened, the prelude calls it in a job as it calls a plain
/// script's completion value (mode 2: the jobs mode 1 takes).
fn run_body<'js>(cx: &Ctx<'js>, p: &Prelude, wrapper: Value<'js>) {
    // SAFETY: reads the value's class only.
    let is_async_function = unsafe { qjs::JS_IsAsyncFunction(wrapper.as_raw()) };
    if !is_async_function || job_pending(cx) || object_prototype_has_then(cx) {
        return call_internal(cx, &p.start, (MODE_VALUE, wrapper));
    }
    // Through mode 1's reaction, with the record an async script's completion would be, so that
    // the stack below the body has the frames it has in the async form.
    let called = completion_record(cx, &wrapper).and_then(|record| {
        p.call_completion
            .clone()
            .restore(cx)?
            .call::<_, Value<'js>>((record,))
    });
    let promise = match called {
        Ok(promise) => promise,
        // Only the memory limit can stop an async function from returning its promise.
        Err(_) => {
            let e = cx.catch();
            return call_internal(cx, &p.fail, (e, "exception"));
        }
    };
    if !job_pending(cx) && crate::adoption::runs_no_script(cx) {
        let settled = promise
            .as_promise()
            .filter(|pr| pr.state() == javy::quickjs::promise::PromiseState::Resolved)
            .and_then(|pr| pr.result::<Value<'js>>())
            .and_then(Result::ok);
        if let Some(value) = settled.filter(|v| !v.is_object()) {
            return match primitive_json(&value) {
                Some(json) => finish_ok(cx, &json),
                None => call_internal(cx, &p.succeed, (value,)),
            };
        }
    }
    call_internal(cx, &p.start, (MODE_CALLED, promise));
}

/// `{ value }`, as an async script's completion record (a data property: defining it runs no
/// setter).
fn completion_record<'js>(cx: &Ctx<'js>, value: &Value<'js>) -> javy::quickjs::Result<Object<'js>> {
    let record = Object::new(cx.clone())?;
    let ctx = cx.as_raw().as_ptr();
    // SAFETY: `ctx` is live and both values are of it; the call takes the dup'd reference.
    let defined = unsafe {
        qjs::JS_DefinePropertyValue(
            ctx,
            record.as_raw(),
            qjs::JS_ATOM_value as qjs::JSAtom,
            qjs::JS_DupValue(ctx, value.as_raw()),
            qjs::JS_PROP_C_W_E as i32,
        )
    };
    if defined < 0 {
        return Err(javy::quickjs::Error::Exception);
    }
    Ok(record)
}

/// Whether the script gave `Object.prototype` a `then`, which an async script's `{ value }`
/// completion record would inherit and be adopted through (the prelude's mode 2 does the same).
fn object_prototype_has_then(cx: &Ctx<'_>) -> bool {
    let ctx = cx.as_raw().as_ptr();
    // `has` runs no getter; only user code can have added the property. An exception (out of
    // memory) counts as having it: the prelude's path is the safe one.
    // SAFETY: the context is live; the prototype is owned by `calls`.
    unsafe {
        match qjs::JS_HasProperty(
            ctx,
            crate::calls::object_prototype(),
            qjs::JS_ATOM_then as qjs::JSAtom,
        ) {
            0 => false,
            found => {
                if found < 0 {
                    qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx));
                }
                true
            }
        }
    }
}

/// Longer result strings are left to the prelude's `succeed`, as the async form leaves them:
/// encoding one in Rust takes copies outside the QuickJS heap, which could exhaust the linear
/// memory (a `memory_limit`) where the prelude's encoding stops at the heap or output limit and
/// says which.
const FAST_STRING_MAX: i64 = 1 << 16;

/// The JSON text of a primitive result that needs no JavaScript to encode: `undefined` is
/// `null` (as the prelude's `succeed` gives), the rest as [`crate::fast_json::primitive`]
/// (strings up to [`FAST_STRING_MAX`] characters).
fn primitive_json(value: &Value<'_>) -> Option<String> {
    if value.is_undefined() {
        return Some("null".into());
    }
    if value.is_string() {
        let ctx = value.ctx().as_raw().as_ptr();
        let mut len = 0i64;
        // SAFETY: a live string of a live context; its `length` is read without a lookup
        // (no getter runs). An exception (out of memory) is cleared and counts as too long.
        let long = unsafe {
            if qjs::JS_GetLength(ctx, value.as_raw(), &mut len) < 0 {
                qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx));
                true
            } else {
                len > FAST_STRING_MAX
            }
        };
        if long {
            return None;
        }
    }
    crate::fast_json::primitive(value)
}

/// Starts the compiled code's outcome from its evaluation (`evaluated`: the completion value or
/// what it threw): at once when nothing can run between it and the result, else through the
/// prelude's `start`, in the jobs an async script takes.
pub fn start<'js>(
    cx: &Ctx<'js>,
    p: &Prelude,
    form: Form,
    evaluated: Result<Value<'js>, Value<'js>>,
) {
    match (form, evaluated) {
        (Form::Async, Ok(value)) => call_internal(cx, &p.start, (MODE_ASYNC, value)),
        (Form::Async, Err(e)) => call_internal(cx, &p.fail, (e, "exception")),
        (Form::Body, Ok(wrapper)) => run_body(cx, p, wrapper),
        // A plain script: with no job queued, nothing can run between its end and
        // the result, so a primitive completion value or an exception ends the eval
        // at once. Otherwise the prelude takes the same number of jobs as the async
        // form would, so that queued jobs run in the same order relative to it.
        (Form::Plain, Ok(value))
            if !value.is_object() && !job_pending(cx) && !object_prototype_has_then(cx) =>
        {
            if value.is_undefined() {
                crate::warnings::note_no_completion();
            }
            match primitive_json(&value) {
                Some(json) => finish_ok(cx, &json),
                None => call_internal(cx, &p.succeed, (value,)),
            }
        }
        (Form::Plain, Ok(value)) => call_internal(cx, &p.start, (MODE_VALUE, value)),
        // A plain script threw (or, for the wrapper, code after a `}` closing
        // its body early).
        (Form::Plain | Form::Body, Err(e)) if !job_pending(cx) => {
            call_internal(cx, &p.fail, (e, "exception"))
        }
        (Form::Plain | Form::Body, Err(e)) => call_internal(cx, &p.start, (MODE_THROWN, e)),
    }
}
