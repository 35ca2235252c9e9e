//! Drives the QuickJS runtime: code forms, the job loop, settling tool calls.

use std::cell::{Cell, RefCell};
use std::mem::ManuallyDrop;

use javy::quickjs::{Ctx, Function, Object, Persistent, Value, qjs};
use javy::{Config, Runtime};

use crate::abi;

const PRELUDE: &str = include_str!("prelude.js");
/// The file name of the user's code in stacks (and the frames `calls` takes as call sites).
pub const FILE_NAME: &std::ffi::CStr = c"script.js";
const PRELUDE_FILE: &std::ffi::CStr = c"codemode:prelude";

/// Creates every built-in object and property that QuickJS would otherwise create on first use
/// (`JSON`, `Math`, `Reflect`, prototypes' method lists…): run at initialisation, so that a
/// snapshot holds them and no eval pays for building them again. Only property descriptors are
/// read: no getter runs.
const MATERIALISE: &str = r#"(() => {
  const seen = new Set();
  const visit = (o, depth) => {
    if (o === null || (typeof o !== "object" && typeof o !== "function")) return;
    if (seen.has(o) || depth > 4) return;
    seen.add(o);
    for (const key of Reflect.ownKeys(o)) {
      const d = Reflect.getOwnPropertyDescriptor(o, key);
      if (d !== undefined && "value" in d) visit(d.value, depth + 1);
    }
    visit(Reflect.getPrototypeOf(o), depth + 1);
  };
  visit(globalThis, 0);
})()"#;

/// The JS runtime and the prelude's entry points.
struct Engine {
    runtime: Runtime,
    prelude: Prelude,
}

/// The prelude's entry points, kept as handles (a snapshot holds them): no eval looks them up
/// by name.
struct Prelude {
    start: Persistent<Function<'static>>,
    fail: Persistent<Function<'static>>,
    succeed: Persistent<Function<'static>>,
    /// Mode 1's reaction, which calls the completion value of a `{ value }` record.
    call_completion: Persistent<Function<'static>>,
    set_source: Persistent<Function<'static>>,
}

thread_local! {
    static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };
    /// Whether the prelude has called `finish` in this run.
    static FINISHED: Cell<bool> = const { Cell::new(false) };
    /// `Math.random`'s state; 0 until first used in this instance (see [`math_random`]).
    static RANDOM: Cell<u64> = const { Cell::new(0) };
    /// This run's code (for the warnings and hints that quote or scan it), and whether it was
    /// compiled as a script (its completion value is the result) rather than a function body.
    /// `ManuallyDrop`: see `calls::PENDING`.
    static SOURCE: RefCell<ManuallyDrop<Vec<u8>>> =
        const { RefCell::new(ManuallyDrop::new(Vec::new())) };
    static IS_SCRIPT: Cell<bool> = const { Cell::new(true) };
}

/// `Math.random`: wyrand (as javy's own, fastrand), seeded from the host's random source the
/// first time an instance uses it. A snapshot is taken before any use, so every instance of it
/// draws its own seed rather than sharing the snapshot's sequence.
fn math_random() -> f64 {
    let mut state = RANDOM.get();
    if state == 0 {
        state = abi::random_u64() | 1;
    }
    state = state.wrapping_add(0xA076_1D64_78BD_642F);
    RANDOM.set(state);
    let t = u128::from(state) * u128::from(state ^ 0xE703_7ED1_A0B4_28DB);
    let bits = ((t >> 64) as u64) ^ (t as u64);
    (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

pub fn init() {
    ENGINE.with(|slot| {
        if slot.borrow().is_some() {
            return;
        }
        let mut config = Config::default();
        config.text_encoding(true);
        // Before QuickJS allocates anything, so that it sizes every block the same way (see
        // `heap`; if the header reading disagreed, it would ask `malloc_usable_size`, only slower).
        let _ = crate::heap::install();
        let runtime = Runtime::new(config).expect("creating the QuickJS runtime");
        let prelude = runtime
            .context()
            .with(|cx| -> javy::quickjs::Result<_> {
                let factory: Function = eval_raw(&cx, PRELUDE.as_bytes(), PRELUDE_FILE, 0)
                    .map_err(|_| javy::quickjs::Error::Exception)?
                    .get()?;
                let (host_call, host_tool) = crate::calls::entry_points(&cx)?;
                let host_log = Function::new(cx.clone(), |level: u32, message: String| {
                    abi::log(level, &message)
                })?;
                let host_finish = Function::new(cx.clone(), |cx: Ctx<'_>, envelope: String| {
                    finish(&cx, &envelope)
                })?;
                let host_warn = Function::new(cx.clone(), |cx: Ctx<'_>, message: String| {
                    let (line, column) = crate::calls::current_position(&cx);
                    crate::warnings::add(message, line, column);
                })?;
                let no_completion = Function::new(cx.clone(), crate::warnings::note_no_completion)?;
                let source_line = Function::new(cx.clone(), source_line)?;
                // Past seven arguments, a call takes an object.
                let more = Object::new(cx.clone())?;
                more.set("hostWarn", host_warn)?;
                more.set("noCompletion", no_completion)?;
                more.set("sourceLine", source_line)?;
                more.set(
                    "isPromise",
                    Function::new(cx.clone(), |value: Value<'_>| value.is_promise())?,
                )?;
                let heap_exhausted = Function::new(cx.clone(), crate::heap::exhausted)?;
                // SAFETY: the context is alive for `cx`'s lifetime; the object is owned.
                let codemode = unsafe {
                    Value::from_raw(cx.clone(), crate::namespace::create(cx.as_raw().as_ptr()))
                };
                if codemode.is_exception() {
                    return Err(javy::quickjs::Error::Exception);
                }
                let internals: Object = factory.call((
                    host_call,
                    host_log,
                    host_finish,
                    host_tool,
                    heap_exhausted,
                    codemode,
                    more,
                ))?;
                let make_tool: Function = internals.get("makeTool")?;
                crate::calls::set_prelude(
                    &cx,
                    &internals.get("callEncoded")?,
                    &internals.get("rejection")?,
                );
                // SAFETY: a live function of this context; the module keeps its own reference.
                unsafe {
                    crate::namespace::set_tool_maker(cx.as_raw().as_ptr(), make_tool.as_raw())
                };
                crate::adoption::keep(&cx)?;
                let math: Object = cx.globals().get("Math")?;
                math.set("random", javy::quickjs::prelude::Func::from(math_random))?;
                let entry = |name: &str| -> javy::quickjs::Result<Persistent<Function<'static>>> {
                    Ok(Persistent::save(&cx, internals.get::<_, Function>(name)?))
                };
                Ok(Prelude {
                    start: entry("start")?,
                    fail: entry("fail")?,
                    succeed: entry("succeed")?,
                    call_completion: entry("callCompletion")?,
                    set_source: entry("setSource")?,
                })
            })
            .expect("evaluating the codemode prelude");
        *slot.borrow_mut() = Some(Engine { runtime, prelude });
    });
}

/// [`init`], then everything a snapshot should hold: the built-ins QuickJS creates lazily
/// ([`MATERIALISE`]), and no garbage. Costs milliseconds, so only worth it once per snapshot.
pub fn init_for_snapshot() {
    init();
    with_engine(|engine| {
        engine.runtime.context().with(|cx| {
            // Cannot fail short of running out of memory; then evals only build them lazily.
            let _ = eval_raw(&cx, MATERIALISE.as_bytes(), PRELUDE_FILE, 0);
        });
        engine.runtime.context().runtime().run_gc();
    });
}

/// `JS_Eval` on a NUL-terminated copy of `src`: returns the value or the pending exception.
fn eval_raw<'js>(
    cx: &Ctx<'js>,
    src: &[u8],
    file: &std::ffi::CStr,
    flags: i32,
) -> Result<Value<'js>, Value<'js>> {
    let mut buf = Vec::with_capacity(src.len() + 1);
    buf.extend_from_slice(src);
    buf.push(0);
    // SAFETY: `buf` is NUL-terminated with `src.len()` bytes before the NUL, as JS_Eval requires
    // (interior NULs are fine: the length is explicit); the returned value is owned.
    let value = unsafe {
        let raw = qjs::JS_Eval(
            cx.as_raw().as_ptr(),
            buf.as_ptr().cast(),
            src.len() as _,
            file.as_ptr(),
            flags,
        );
        Value::from_raw(cx.clone(), raw)
    };
    if value.is_exception() {
        Err(cx.catch())
    } else {
        Ok(value)
    }
}

/// Runs a function compiled with `JS_EVAL_FLAG_COMPILE_ONLY`.
fn eval_function<'js>(cx: &Ctx<'js>, compiled: Value<'js>) -> Result<Value<'js>, Value<'js>> {
    // SAFETY: JS_EvalFunction takes ownership of `compiled`'s value, so the handle is forgotten
    // rather than dropped (no reference of its own is kept); the result is owned.
    let value = unsafe {
        let raw = compiled.as_raw();
        std::mem::forget(compiled);
        Value::from_raw(cx.clone(), qjs::JS_EvalFunction(cx.as_raw().as_ptr(), raw))
    };
    if value.is_exception() {
        Err(cx.catch())
    } else {
        Ok(value)
    }
}

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
enum Form {
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
fn compile<'js>(cx: &Ctx<'js>, code: &[u8]) -> Result<(Value<'js>, Form, i32), (Value<'js>, i32)> {
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

/// Calls one of the prelude's entry points. They catch everything themselves; an exception here
/// could only come from the memory limit, and then `drive` reports the missing result.
fn call_internal<'js, A: javy::quickjs::function::IntoArgs<'js>>(
    cx: &Ctx<'js>,
    f: &Persistent<Function<'static>>,
    args: A,
) {
    if let Ok(f) = f.clone().restore(cx) {
        let _ = f.call::<_, ()>(args);
    }
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

/// Ends the eval with a result already encoded as JSON, as the prelude's `succeed` would.
fn finish_ok(cx: &Ctx<'_>, json: &str) {
    finish(cx, &format!(r#"{{"ok":true,"result":{json}}}"#));
}

/// Passes the outcome envelope to the host, with the guest's warnings: tool calls nothing
/// awaited (whether the script succeeded or failed: a forgotten `await` often explains the
/// failure), and when it succeeded a `null` result from a last statement that is not an
/// expression (warnings about promises in the result are added while it is encoded).
fn finish(cx: &Ctx<'_>, envelope: &str) {
    FINISHED.with(|f| f.set(true));
    for (name, (line, column)) in crate::calls::unawaited(cx) {
        let shown = if name.len() <= 64 {
            name
        } else {
            format!("{}…", name.chars().take(64).collect::<String>())
        };
        crate::warnings::add(
            format!(
                "the promise of this call to `{shown}` was never awaited: the script went on without its result or its error (did you forget `await`?)"
            ),
            line,
            column,
        );
    }
    if envelope.starts_with(r#"{"ok":true"#) && crate::warnings::no_completion() && IS_SCRIPT.get()
    {
        let at = SOURCE.with(|code| crate::warnings::last_statement_not_expression(&code.borrow()));
        if let Some((line, column)) = at {
            crate::warnings::add(
                "the result is null: the script's last statement is not an expression and it has no `return` (end it with the value to return, or `return` it)".into(),
                line,
                column,
            );
        }
    }
    match crate::warnings::append_to(envelope) {
        Some(with_warnings) => abi::finish(&with_warnings),
        None => abi::finish(envelope),
    }
}

/// Line `line` (1-based) of this run's code, for hints that quote it; empty past the end.
fn source_line(line: u32) -> String {
    SOURCE.with(|code| {
        let code = code.borrow();
        code.split(|&b| b == b'\n')
            .nth(line.saturating_sub(1) as usize)
            .map(|text| String::from_utf8_lossy(text).into_owned())
            .unwrap_or_default()
    })
}

/// Whether a promise job is queued.
fn job_pending(cx: &Ctx<'_>) -> bool {
    // SAFETY: the context is alive for `cx`'s lifetime; the call only reads the runtime's queue.
    unsafe { qjs::JS_IsJobPending(qjs::JS_GetRuntime(cx.as_raw().as_ptr())) }
}

fn with_engine<R>(f: impl FnOnce(&Engine) -> R) -> R {
    init();
    ENGINE.with(|slot| f(slot.borrow().as_ref().expect("initialised above")))
}

pub fn run(code: Vec<u8>, heap_limit: usize) -> u32 {
    FINISHED.with(|f| f.set(false));
    crate::warnings::reset();
    SOURCE.with(|source| **source.borrow_mut() = code);
    SOURCE.with(|source| run_code(&source.borrow(), heap_limit))
}

fn run_code(code: &[u8], heap_limit: usize) -> u32 {
    with_engine(|engine| {
        engine.runtime.context().with(|cx| {
            // QuickJS counts its own allocations; 0 means no limit beyond the linear memory's.
            // SAFETY: the context is alive for `cx`'s lifetime.
            let rt = unsafe { qjs::JS_GetRuntime(cx.as_raw().as_ptr()) };
            crate::heap::set_limit(
                rt,
                if heap_limit == 0 {
                    usize::MAX
                } else {
                    heap_limit
                },
            );
            let p = &engine.prelude;
            // Lines of the user's code (a trailing newline does not start one).
            let lines = || {
                let lines =
                    code.split(|&b| b == b'\n').count() - usize::from(code.ends_with(b"\n"));
                i32::try_from(lines).unwrap_or(i32::MAX)
            };
            match compile(&cx, code) {
                Ok((compiled, form, offset)) => {
                    // The prelude starts with offset 0; the line count only matters to syntax
                    // errors.
                    if offset != 0 {
                        call_internal(&cx, &p.set_source, (offset, lines()));
                    }
                    crate::calls::set_line_offset(offset as u32);
                    IS_SCRIPT.set(offset == 0);
                    match (form, eval_function(&cx, compiled)) {
                        (Form::Async, Ok(value)) => {
                            call_internal(&cx, &p.start, (MODE_ASYNC, value))
                        }
                        (Form::Async, Err(e)) => call_internal(&cx, &p.fail, (e, "exception")),
                        (Form::Body, Ok(wrapper)) => run_body(&cx, p, wrapper),
                        // A plain script: with no job queued, nothing can run between its end and
                        // the result, so a primitive completion value or an exception ends the eval
                        // at once. Otherwise the prelude takes the same number of jobs as the async
                        // form would, so that queued jobs run in the same order relative to it.
                        (Form::Plain, Ok(value))
                            if !value.is_object()
                                && !job_pending(&cx)
                                && !object_prototype_has_then(&cx) =>
                        {
                            if value.is_undefined() {
                                crate::warnings::note_no_completion();
                            }
                            match primitive_json(&value) {
                                Some(json) => finish_ok(&cx, &json),
                                None => call_internal(&cx, &p.succeed, (value,)),
                            }
                        }
                        (Form::Plain, Ok(value)) => {
                            call_internal(&cx, &p.start, (MODE_VALUE, value))
                        }
                        // A plain script threw (or, for the wrapper, code after a `}` closing
                        // its body early).
                        (Form::Plain | Form::Body, Err(e)) if !job_pending(&cx) => {
                            call_internal(&cx, &p.fail, (e, "exception"))
                        }
                        (Form::Plain | Form::Body, Err(e)) => {
                            call_internal(&cx, &p.start, (MODE_THROWN, e))
                        }
                    }
                }
                Err((e, offset)) => {
                    call_internal(&cx, &p.set_source, (offset, lines()));
                    call_internal(&cx, &p.fail, (e, "syntax"));
                }
            }
            drive(&cx, p)
        })
    })
}

pub fn resume(id: u32, ok: bool, payload: Vec<u8>) -> u32 {
    with_engine(|engine| {
        engine.runtime.context().with(|cx| {
            crate::calls::settle(&cx, id, ok, payload);
            drive(&cx, &engine.prelude)
        })
    })
}

/// Runs promise jobs until none is left, then reports whether the script finished.
fn drive<'js>(cx: &Ctx<'js>, prelude: &Prelude) -> u32 {
    let is_finished = || FINISHED.with(|f| f.get());
    loop {
        while cx.execute_pending_job() {}
        if is_finished() {
            return abi::STATUS_DONE;
        }
        if crate::calls::outstanding() > 0 {
            return abi::STATUS_PENDING;
        }
        // Nothing can ever settle the script's promise: no job is queued and no tool call is
        // in flight. Report it instead of hanging.
        let error = javy::quickjs::Exception::from_message(
            cx.clone(),
            "the script awaits a promise that can never settle (no tool call is in flight)",
        )
        .map(|e| e.into_value())
        .unwrap_or_else(|_| Value::new_undefined(cx.clone()));
        call_internal(cx, &prelude.fail, (error, "exception"));
        if !is_finished() {
            // Not even the failure could be reported: the heap is exhausted (the prelude's
            // reporting looks up nothing a script can replace), or, should that ever be wrong,
            // the script's doing; never a kind the script did not cause.
            abi::finish(if crate::heap::exhausted() {
                concat!(
                    r#"{"ok":false,"error":{"kind":"memory_limit","message":"#,
                    r#""the script ran out of memory before it could finish","#,
                    r#""line":null,"column":null,"stack":null}}"#
                )
            } else {
                concat!(
                    r#"{"ok":false,"error":{"kind":"exception","message":"#,
                    r#""the script ended in a way that could not be reported","#,
                    r#""line":null,"column":null,"stack":null}}"#
                )
            });
            return abi::STATUS_DONE;
        }
    }
}
