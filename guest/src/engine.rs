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
pub(crate) struct Prelude {
    pub(crate) start: Persistent<Function<'static>>,
    pub(crate) fail: Persistent<Function<'static>>,
    pub(crate) succeed: Persistent<Function<'static>>,
    /// Mode 1's reaction, which calls the completion value of a `{ value }` record.
    pub(crate) call_completion: Persistent<Function<'static>>,
    pub(crate) set_source: Persistent<Function<'static>>,
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
pub(crate) fn eval_raw<'js>(
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
pub(crate) fn eval_function<'js>(
    cx: &Ctx<'js>,
    compiled: Value<'js>,
) -> Result<Value<'js>, Value<'js>> {
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

/// Calls one of the prelude's entry points. They catch everything themselves; an exception here
/// could only come from the memory limit, and then `drive` reports the missing result.
pub(crate) fn call_internal<'js, A: javy::quickjs::function::IntoArgs<'js>>(
    cx: &Ctx<'js>,
    f: &Persistent<Function<'static>>,
    args: A,
) {
    if let Ok(f) = f.clone().restore(cx) {
        let _ = f.call::<_, ()>(args);
    }
}

/// Ends the eval with a result already encoded as JSON, as the prelude's `succeed` would.
pub(crate) fn finish_ok(cx: &Ctx<'_>, json: &str) {
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
pub(crate) fn job_pending(cx: &Ctx<'_>) -> bool {
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
            match crate::forms::compile(&cx, code) {
                Ok((compiled, form, offset)) => {
                    // The prelude starts with offset 0; the line count only matters to syntax
                    // errors.
                    if offset != 0 {
                        call_internal(&cx, &p.set_source, (offset, lines()));
                    }
                    crate::calls::set_line_offset(offset as u32);
                    IS_SCRIPT.set(offset == 0);
                    crate::forms::start(&cx, p, form, eval_function(&cx, compiled));
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
