//! The native baseline: the same QuickJS (javy 8.1, QuickJS-ng via rquickjs) compiled for the
//! host, running the very same JS sources as the sandbox, so that "n× native" compares the
//! sandbox with the engine it contains rather than with another JS engine.
//!
//! Built only with the `native-baseline` feature: javy's C build adds a minute of compile time
//! (the bindings for x86_64 Linux ship with rquickjs-sys, so a C compiler is all it needs).

use std::time::{Duration, Instant};

/// `true` when this build can measure the native baseline.
pub const AVAILABLE: bool = cfg!(feature = "native-baseline");

/// Evaluates `source` the way the guest does (a strict global script with top-level `await`,
/// then the job queue until its promise settles) in a fresh QuickJS runtime. Returns the time
/// taken, runtime creation included (the sandbox's figure includes its fresh instance), and the
/// completion value as JSON.
///
/// # Errors
/// The exception's text, when the script throws; or why the baseline is not available.
pub fn eval(source: &str) -> Result<(Duration, String), crate::BenchError> {
    imp::eval(source)
}

#[cfg(feature = "native-baseline")]
mod imp {
    use super::*;
    use javy::quickjs::{Object, Promise, Value, qjs};

    const FLAGS: i32 =
        (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_STRICT | qjs::JS_EVAL_FLAG_ASYNC) as i32;

    pub fn eval(source: &str) -> Result<(Duration, String), crate::BenchError> {
        let started = Instant::now();
        // The guest's configuration (guest/src/engine.rs).
        let mut config = javy::Config::default();
        config.text_encoding(true);
        let runtime = javy::Runtime::new(config).map_err(|e| format!("javy runtime: {e}"))?;
        // The runtime is dropped (its heap freed) before the clock stops, like the sandbox's
        // instance.
        let json = run_in(runtime, source)?;
        Ok((started.elapsed(), json))
    }

    fn run_in(runtime: javy::Runtime, source: &str) -> Result<String, String> {
        runtime.context().with(|cx| -> Result<String, String> {
            let mut code = Vec::with_capacity(source.len() + 1);
            code.extend_from_slice(source.as_bytes());
            code.push(0);
            // SAFETY: `code` is NUL-terminated with `source.len()` bytes before the NUL, as
            // JS_Eval requires; the returned value is owned and handed to `Value::from_raw`.
            let value = unsafe {
                let raw = qjs::JS_Eval(
                    cx.as_raw().as_ptr(),
                    code.as_ptr().cast(),
                    source.len() as _,
                    c"bench.js".as_ptr(),
                    FLAGS,
                );
                Value::from_raw(cx.clone(), raw)
            };
            let exception = |cx: &javy::quickjs::Ctx<'_>| {
                let e = cx.catch();
                e.as_exception()
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| format!("{e:?}"))
            };
            if value.is_exception() {
                return Err(exception(&cx));
            }
            let promise = Promise::from_value(value).map_err(|e| e.to_string())?;
            let completion: Object = promise.finish().map_err(|_| exception(&cx))?;
            let value: Value = completion.get("value").map_err(|e| e.to_string())?;
            let json = cx
                .json_stringify(value)
                .map_err(|_| exception(&cx))?
                .map(|s| s.to_string())
                .transpose()
                .map_err(|e| e.to_string())?;
            Ok(json.unwrap_or_else(|| "null".into()))
        })
    }
}

#[cfg(not(feature = "native-baseline"))]
mod imp {
    use super::*;

    pub fn eval(_source: &str) -> Result<(Duration, String), crate::BenchError> {
        let _ = Instant::now();
        Err("not built: rebuild with `--features native-baseline`".into())
    }
}
