// The codemode prelude: evaluated once per instance (at snapshot time when snapshotted), before
// any user code. It receives the Rust side's functions and the `codemode` object, and returns the
// internal entry points the Rust side keeps; nothing here is reachable from user code except
// `codemode`, `console` and the three error classes.
(function (hostCall, hostLog, hostFinish, hostTool, heapExhausted, codemode, more) {
  "use strict";

  const { hostWarn, noCompletion, sourceLine } = more;

  const FILE = "script.js";
  const POSITION = /script\.js:(\d+):(\d+)/;
  const POSITIONS = /script\.js:(\d+):(\d+)/g;
  // Lines the wrapper put before the user's code, and the code's own line count (only syntax
  // errors need it); set by `setSource` before anything runs, unless they are these defaults.
  let lineOffset = 0;
  let lineCount = 1;

  // What the outcome is reported with, taken before any user code runs: a script may replace
  // any global or prototype (`JSON.stringify`, `String.prototype.toWellFormed`, a `toJSON` on
  // `Object.prototype`, `Number`, `RegExp.prototype.exec` …), and none of that may change the
  // envelope's shape, its error kind or its warnings (the script's own values and messages are
  // the script's). The envelope's JSON is written here from primitives: `stringify` of a string,
  // number or null looks up no `toJSON`. No template literal with a substitution is used: QuickJS
  // compiles one into a call of `String.prototype.concat`, looked up when it runs; `+` of
  // primitives looks nothing up.
  // QuickJS-ng's V8-style `Error.prepareStackTrace` would run a script's function whenever an
  // error is made — inside the prelude's own code too — and hand it call sites whose
  // `getFunction()` returns the prelude's functions (`fail`, `succeed`…); an object as
  // `Error.stackTraceLimit` would have its `valueOf` run at the same moments. codemode offers
  // neither hook: both are fixed (`undefined`, and QuickJS's default of 10 frames), so making an
  // error never runs script code.
  for (const [name, value] of [["prepareStackTrace", undefined], ["stackTraceLimit", 10]]) {
    Object.defineProperty(Error, name, { value, writable: false, enumerable: false, configurable: false });
  }
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const apply = Reflect.apply;
  const { max, min } = Math;
  const { isArray } = Array;
  const keysOf = Object.keys;
  const create = Object.create;
  const NativeTypeError = TypeError;
  // `instanceof` looks up the constructor's `Symbol.hasInstance`, which a script can define on
  // `Error` itself; `Function.prototype`'s is fixed (not writable, not configurable): the
  // prototype chain compared with the built-in's `prototype`, also fixed.
  const ordinaryHasInstance = Function.prototype[Symbol.hasInstance];
  const isA = (C, v) => apply(ordinaryHasInstance, C, [v]);
  const NativeError = Error;
  const NativeReferenceError = ReferenceError;
  const NativeSyntaxError = SyntaxError;
  const indexOf = String.prototype.indexOf;
  // The built-in `exec` runs the expression itself; `test`, `match` and the like look `exec` up.
  const regexpExec = RegExp.prototype.exec;
  const matches = (re, s) => apply(regexpExec, re, [s]) !== null;
  const { isPromise } = more;
  const nativeToWellFormed = String.prototype.toWellFormed;
  const wellFormed = typeof nativeToWellFormed === "function"
    ? (s) => (typeof s === "string" ? apply(nativeToWellFormed, s, []) : s)
    : (s) => s;
  // JSON text of a string (well-formed), else `null`.
  const jsonString = (s) => (typeof s === "string" ? stringify(wellFormed(s)) : "null");
  // A 1-based line or column, else null; whatever `v` is (a forged match, an object).
  const position = (v) => {
    const n = +v;
    return n >= 1 && n < 4294967296 ? n - (n % 1) : null;
  };
  // An error's message as text, whatever the error is (its `message` may be a getter that throws).
  function messageOf(e) {
    try {
      return "" + e.message;
    } catch (_) {
      return "(its message cannot be read)";
    }
  }

  // JSON.stringify escapes lone surrogates (`"\ud800"`), which are not Unicode: the host cannot
  // read them. Only when one is present, stringify again with them replaced (U+FFFD).
  const LONE_SURROGATE = /\\ud[89a-f][0-9a-f]{2}/i;
  function toJson(value) {
    const json = stringify(value);
    // Most documents have no escape at all: skip the regular expression for them (JSON.stringify
    // writes `\u` escapes in lower case).
    if (json === undefined || apply(indexOf, json, ["\\u"]) === -1) return json;
    if (!matches(LONE_SURROGATE, json)) return json;
    // Values and keys alike: the host reads UTF-8, which has no lone surrogates.
    return stringify(value, (_key, v) => {
      if (typeof v === "string") return wellFormed(v);
      if (v === null || typeof v !== "object" || isArray(v)) return v;
      const keys = keysOf(v);
      let same = true;
      for (let i = 0; i < keys.length && same; i++) same = wellFormed(keys[i]) === keys[i];
      if (same) return v;
      // No prototype: no setter a script put on `Object.prototype` runs here.
      const out = create(null);
      for (let i = 0; i < keys.length; i++) out[wellFormed(keys[i])] = v[keys[i]];
      return out;
    });
  }

  class ToolError extends Error {
    constructor(message, tool, data) {
      super(message);
      this.tool = tool;
      if (data !== undefined && data !== null) this.data = data;
    }
  }
  class UnknownToolError extends ToolError {}
  class ToolCallDeniedError extends Error {
    constructor(message, toolName, reason) {
      super(message);
      this.toolName = toolName;
      this.tool = toolName;
      this.reason = reason;
    }
  }
  for (const C of [ToolError, UnknownToolError, ToolCallDeniedError]) {
    Object.defineProperty(C.prototype, "name", { value: C.name, writable: true, configurable: true });
    Object.defineProperty(globalThis, C.name, { value: C, writable: true, configurable: true });
  }

  // ---- tool calls -----------------------------------------------------------------------------
  // A tool function is made by the Rust side of the guest (`hostTool`, guest/src/calls.rs): it
  // encodes arguments that are a plain object of primitives itself, starts the call and returns
  // its promise, which the Rust side settles: with the result, or with what `rejection` makes of
  // the host's error. Any other arguments come here, to be encoded by JSON.stringify. `name` as
  // the script wrote it (for messages), `hostName` with lone surrogates replaced.
  function callEncoded(name, hostName, args) {
    let json;
    try {
      json = toJsonNoting(args, name);
    } catch (e) {
      return Promise.reject(new NativeTypeError("codemode." + name + ": arguments are not JSON-serialisable: " + messageOf(e)));
    }
    if (json === undefined) {
      return Promise.reject(new NativeTypeError("codemode." + name + ": arguments are not JSON-serialisable (got a " + typeof args + ")"));
    }
    return hostCall(hostName, json, name);
  }

  // `codemode` itself is made by the Rust side of the guest (guest/src/namespace.rs): reading a
  // string property but `then` gives the function that `makeTool` made for that name on its
  // first use (kept, so a property read allocates nothing after that); nothing can be assigned,
  // defined or deleted on it.
  function makeTool(prop) {
    const tool = hostTool(prop, wellFormed(prop));
    Object.defineProperty(tool, "name", { value: prop });
    return tool;
  }
  Object.defineProperty(globalThis, "codemode", { value: codemode, writable: false, configurable: false });

  // The error a failed call rejects with, from the host's JSON description of it. Its stack is
  // the call's site (`line`:`column` of the compiled code, 0 when unknown): the frames that led
  // to the call are gone by the time the host answers.
  const PLAIN_NAME = /^[\w$-]{1,64}$/;
  function rejection(name, json, line, column) {
    let error;
    let value;
    try {
      value = parse(json);
    } catch (e) {
      error = new ToolError("codemode." + name + ": the host sent invalid JSON: " + messageOf(e), name);
    }
    if (error !== undefined) {
      // set below
    } else if (value === null || typeof value !== "object") {
      error = new ToolError("codemode." + name + ": the host sent an invalid error description", name);
    } else if (value.type === "denied") {
      error = new ToolCallDeniedError(value.message, name, value.reason);
    } else if (value.type === "not_found") {
      error = new UnknownToolError(value.message, name);
    } else {
      error = new ToolError(value.message, name, value.data);
    }
    if (line > 0) {
      // The frame names the tool when its name is a plain identifier-like one (anything else
      // could hold text that reads like a position). `stack` is the error's own data property.
      const tool = matches(PLAIN_NAME, name) ? "codemode." + name : "codemode[…]";
      error.stack = "    at " + tool + " (" + FILE + ":" + line + ":" + column + ")\n";
    }
    return error;
  }

  // A promise in a result (or tool arguments) is sent as `{}`: almost always a missing `await`.
  // JSON.stringify calls this `toJSON` for each promise it meets: it counts them (and keeps the
  // first one's key) for `toJsonNoting`, which resets the count before it encodes; nothing is
  // allocated when there is none.
  let promises = 0;
  let firstPromiseKey = "";
  Object.defineProperty(Promise.prototype, "toJSON", {
    value: function toJSON(key) {
      // Only a real promise counts: a script can call this function on anything.
      if (isPromise(this) && promises++ === 0) firstPromiseKey = "" + key;
      return this;
    },
    writable: true,
    configurable: true,
  });
  // JSON text of `value` as `toJson` gives it, with a warning when it held a promise; `what` is
  // the tool whose arguments it is, null for the result.
  function toJsonNoting(value, what) {
    promises = 0;
    const json = toJson(value);
    if (promises > 0) {
      const where = firstPromiseKey === "" ? "" : " (at key `" + firstPromiseKey + "`)";
      const count = promises === 1 ? "a Promise" : promises + " Promises, the first";
      const subject = what === null ? "the result contains" : "the arguments of codemode." + what + " contain";
      hostWarn(wellFormed(subject + " " + count + where + ", which is sent as {}: did you forget `await`?"));
    }
    return json;
  }

  // A script that meant to call a tool whose name has a dash, `codemode.a-b(...)`, computed
  // `codemode.a - b(...)`: "b is not defined". The hint, when the line holds such a chain.
  const DASHED = /codemode\s*\.\s*([A-Za-z_$][\w$]*)((?:\s*-\s*[A-Za-z_$][\w$]*)+)/g;
  function dashHint(text, missing) {
    if (typeof text !== "string") return "";
    for (const m of text.matchAll(DASHED)) {
      const parts = m[2].split("-").map((p) => p.trim()).slice(1);
      if (parts.includes(missing)) {
        const tool = [m[1], ...parts].join("-");
        return " (`codemode." + tool + "` subtracts: to call the tool \"" + tool + "\", write codemode[\"" + tool + "\"](...))";
      }
    }
    return "";
  }

  // ---- console --------------------------------------------------------------------------------
  // Positions refer to the user's code, and the prelude's own frames are left out.
  function fixStack(stack) {
    if (typeof stack !== "string") return null;
    return stack
      .split("\n")
      .filter((line) => !line.includes("codemode:prelude"))
      .join("\n")
      .replace(POSITIONS, (_m, l, c) => FILE + ":" + max(1, l - lineOffset) + ":" + c);
  }

  function format(v) {
    switch (typeof v) {
      case "string": return v;
      case "undefined": return "undefined";
      case "function": return "[Function " + (v.name || "anonymous") + "]";
      case "bigint": return v + "n";
      case "symbol": return v.toString();
      case "object":
        if (v === null) return "null";
        if (v instanceof Error) {
          const head = v.name + ": " + v.message;
          const stack = fixStack(v.stack);
          return stack ? head + "\n" + stack.replace(/\n$/, "") : head;
        }
        try {
          const s = stringify(v);
          if (s !== undefined) return s;
        } catch (_) { /* circular or BigInt inside: fall back to String() */ }
        try { return String(v); } catch (_) { return "[object]"; }
      default: return String(v);
    }
  }

  const console = {};
  ["log", "info", "warn", "error", "debug"].forEach((method, level) => {
    console[method] = (...args) => { hostLog(level, wellFormed(args.map(format).join(" "))); };
  });
  Object.defineProperty(globalThis, "console", { value: console, writable: true, configurable: true });

  // ---- results --------------------------------------------------------------------------------
  let finished = false;

  function finish(envelope) {
    if (finished) return;
    finished = true;
    hostFinish(envelope);
  }

  function errorEnvelope(e, kind) {
    let message;
    let stack = null;
    if (isA(NativeError, e) || (e !== null && typeof e === "object" && typeof e.message === "string")) {
      const name = typeof e.name === "string" && e.name ? e.name : "Error";
      message = name + ": " + e.message;
      stack = fixStack(e.stack);
      // Only a heap that really ran out makes `memory_limit`: a script can throw an object
      // named like QuickJS's error. Near the limit QuickJS may not even have room for the
      // error's message (`""`).
      const oom = e.message === "out of memory" || e.message === "";
      if (kind === "exception" && name === "InternalError" && oom && heapExhausted()) {
        kind = "memory_limit";
        message = "InternalError: out of memory";
      }
    } else if (e === null && kind === "exception" && heapExhausted()) {
      // QuickJS throws null when it cannot even allocate its "out of memory" error.
      message = "InternalError: out of memory";
      kind = "memory_limit";
    } else {
      message = "Uncaught " + format(e);
    }
    const m = typeof stack === "string" ? apply(regexpExec, POSITION, [stack]) : null;
    let line = m ? position(m[1]) : null;
    let column = m ? position(m[2]) : null;
    if (kind === "exception" && line !== null && isA(NativeReferenceError, e)) {
      const m = /^(\S+) is not defined$/.exec(e.message);
      if (m) message += dashHint(sourceLine(line), m[1]);
    }
    if (kind === "syntax") {
      // QuickJS reports a syntax error's line well but its column poorly (often a statement's
      // or the wrapper's start), and at the end of the code a line past it: keep the line,
      // clamped to the code, and leave the column to a real parser in the host.
      line = line === null ? null : min(max(line, 1), lineCount);
      column = null;
      stack = null;
    }
    return errorJson(kind, "" + message, line, column, stack === "" ? null : stack);
  }

  // The failure envelope's JSON text (see `stringify` above for why it is written by hand).
  function errorJson(kind, message, line, column, stack) {
    const at = (n) => (n === null ? "null" : "" + n);
    return '{"ok":false,"error":{"kind":' + jsonString(kind) + ',"message":' + jsonString(message) +
      ',"line":' + at(line) + ',"column":' + at(column) + ',"stack":' + jsonString(stack) + "}}";
  }

  function fail(e, kind) {
    // The code did not compile for want of memory, or for a limit of QuickJS's that is not a
    // syntax error (no user code has run yet: `e` is QuickJS's own, its name and message too).
    if (kind === "syntax" && !isA(NativeSyntaxError, e)) {
      const oom = heapExhausted() || (e !== null && e.name === "InternalError" && e.message === "out of memory");
      kind = oom ? "memory_limit" : "exception";
    }
    let envelope;
    try {
      envelope = errorEnvelope(e, kind);
    } catch (_) {
      const oom = kind === "memory_limit" || (kind === "exception" && heapExhausted());
      envelope = oom
        ? errorJson("memory_limit", "the script ran out of memory before its error could be described", null, null, null)
        : errorJson(kind, "the script failed with an error that cannot be described", null, null, null);
    }
    finish(envelope);
  }

  function succeed(value) {
    if (value === undefined) value = null;
    let json;
    try {
      json = toJsonNoting(value, null);
    } catch (e) {
      fail(new NativeTypeError("the result is not JSON-serialisable: " + messageOf(e)), "exception");
      return;
    }
    if (json === undefined) {
      fail(new NativeTypeError("the result is not JSON-serialisable (got a " + typeof value + ")"), "exception");
      return;
    }
    finish('{"ok":true,"result":' + json + "}");
  }

  // How the code's completion becomes the result; a function completion value (the
  // `async () => {...}` form) is called and its result awaited.
  // mode 1: an async script (it used `await`), `value` is the promise of `{ value: completion }`.
  // mode 2: a plain script (no `await`), `value` is its completion value.
  // mode 3: a plain script threw `value`.
  // mode 4: `value` is the promise the async-function wrapper (top-level `return`, no `await`)
  // returned when the Rust side called it, as mode 1's reaction would have.
  // Modes 2 and 3 take exactly the jobs mode 1 takes (one reaction, then the result's), so jobs
  // the script queued run in the same order relative to the result as in an async script.
  // A plain promise chain: fewer jobs and no async frame per eval than an async wrapper.
  // `then` as it was before user code ran (which could replace `Promise.prototype.then`).
  const then = Function.prototype.call.bind(Promise.prototype.then);
  const NativePromise = Promise;
  // `then` makes its promise with the species of the promise's `constructor` (a script can
  // replace `Promise.prototype.constructor` or `Promise[Symbol.species]`): each promise the
  // chain below starts from gets an own `constructor` of `undefined`, for which `then` uses the
  // built-in Promise. The descriptor has no prototype: nothing a script adds to
  // `Object.prototype` (a `get`, say) is read into it.
  const NO_CONSTRUCTOR = create(null, { value: { value: undefined, enumerable: true } });
  const defineProperty = Object.defineProperty;
  const plain = (promise) => defineProperty(promise, "constructor", NO_CONSTRUCTOR);
  const READY = plain(Promise.resolve());
  const failException = (e) => fail(e, "exception");
  const call = (v) => {
    if (typeof v === "function") return v();
    if (v === undefined) noCompletion();
    return v;
  };
  // Mode 1's reaction to an async script's `{ value: completion }`. Mode 2 and the guest's own
  // call of the async-function wrapper go through it too: the frames below the script's code in
  // a stack it reads (`new Error().stack`) are then the same whatever the form.
  const callCompletion = (c) => call(c.value);
  function start(mode, value) {
    let result;
    if (mode === 1) {
      result = then(plain(value), callCompletion);
    } else if (mode === 4) {
      // Resolving with the wrapper's promise adopts it in the jobs mode 1's reaction takes when
      // it returns that promise.
      result = new NativePromise((resolve) => resolve(value));
    } else if (mode === 3) {
      result = then(READY, () => { throw value; });
    } else {
      // As an async script's `{ value }`, which is a thenable too when the script gave every
      // object a `then` (then adopted before the reaction runs).
      result = then(plain(new NativePromise((resolve) => resolve({ value }))), callCompletion);
    }
    then(plain(result), succeed, failException);
  }

  return {
    start,
    rejection,
    makeTool,
    callEncoded,
    fail,
    succeed,
    callCompletion,
    setSource: (offset, lines) => { lineOffset = offset; lineCount = max(1, lines); },
  };
})
