//! The host side of the guest ABI (version 2, see guest/ABI.md): the `codemode` imports and the
//! typed handles to the guest's exports, by the names and constants of `codemode-abi` (the crate
//! the guest is built with too). Every pointer, length and string the guest passes is validated
//! here; a malformed call ends the eval with [`ErrorKind::Internal`], never a panic.

use wasmtime::{
    Caller, Extern, Func, Instance, Linker, Memory, Module, ModuleExport, Store, TypedFunc,
};

use crate::outcome::{ErrorKind, EvalError, LogEntry, LogLevel};
use crate::state::{HostState, StartedCall};

// The constants both sides agree on, from the crate the guest builds with too.
pub use codemode_abi::{
    ABI_VERSION, MAX_TOOL_ARGS_BYTES, MAX_TOOL_NAME_BYTES, STATUS_DONE, STATUS_PENDING,
};
use codemode_abi::{exports, imports};

/// Adds the `codemode` imports to `linker`.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(imports::MODULE, imports::CALL_START, call_start)?;
    linker.func_wrap(imports::MODULE, imports::LOG, log)?;
    linker.func_wrap(imports::MODULE, imports::FINISH, finish)?;
    Ok(())
}

/// Ends the eval from inside a host import: remember why, then trap.
fn abort(caller: &mut Caller<'_, HostState>, error: EvalError) -> wasmtime::Error {
    let message = error.message.clone();
    if caller.data().abort.is_none() {
        caller.data_mut().abort = Some(error);
    }
    wasmtime::format_err!("{message}")
}

fn malformed(caller: &mut Caller<'_, HostState>, what: &str) -> wasmtime::Error {
    abort(
        caller,
        EvalError::new(
            ErrorKind::Internal,
            format!("malformed host call from the guest: {what}"),
        ),
    )
}

/// The guest's exported memory: the handle [`GuestExports::bind`] kept, else looked up by name
/// (while `bind` itself runs the guest's initialisation).
pub(crate) fn guest_memory(caller: &mut Caller<'_, HostState>) -> Option<Memory> {
    if let Some(memory) = caller.data().guest_memory {
        return Some(memory);
    }
    caller
        .get_export(exports::MEMORY)
        .and_then(Extern::into_memory)
}

/// Copies `len` bytes at `ptr` out of the guest's memory, or explains why not.
fn read_bytes(
    caller: &mut Caller<'_, HostState>,
    ptr: u32,
    len: u32,
    what: &str,
) -> wasmtime::Result<Vec<u8>> {
    let Some(memory) = guest_memory(caller) else {
        return Err(malformed(caller, "the guest exports no memory"));
    };
    let data = memory.data(&*caller);
    let (start, len) = (ptr as usize, len as usize);
    match start.checked_add(len).and_then(|end| data.get(start..end)) {
        Some(bytes) => Ok(bytes.to_vec()),
        None => {
            let size = data.len();
            Err(malformed(
                caller,
                &format!("{what} at {start}+{len} lies outside the guest's memory ({size} bytes)"),
            ))
        }
    }
}

/// Fails unless `ptr..ptr + len` lies inside the guest's memory (nothing is copied).
fn check_bounds(
    caller: &mut Caller<'_, HostState>,
    ptr: u32,
    len: u32,
    what: &str,
) -> wasmtime::Result<()> {
    let size = guest_memory(caller).map_or(0, |m| m.data_size(&*caller));
    match (ptr as usize).checked_add(len as usize) {
        Some(end) if end <= size => Ok(()),
        _ => Err(malformed(
            caller,
            &format!("{what} at {ptr}+{len} lies outside the guest's memory ({size} bytes)"),
        )),
    }
}

fn read_string(
    caller: &mut Caller<'_, HostState>,
    ptr: u32,
    len: u32,
    what: &str,
) -> wasmtime::Result<String> {
    let bytes = read_bytes(caller, ptr, len, what)?;
    String::from_utf8(bytes)
        .map_err(|e| malformed(caller, &format!("{what} is not valid UTF-8 ({e})")))
}

fn call_start(
    mut caller: Caller<'_, HostState>,
    name_ptr: u32,
    name_len: u32,
    args_ptr: u32,
    args_len: u32,
    line: u32,
    column: u32,
) -> wasmtime::Result<u32> {
    // The guest rejects a name or arguments past these limits itself (catchably); a guest that
    // does not is still kept to them, and the eval ends as the script's error.
    if name_len as usize > MAX_TOOL_NAME_BYTES {
        let error = EvalError::new(
            ErrorKind::Exception,
            format!(
                "a tool name of {name_len} bytes exceeds the {MAX_TOOL_NAME_BYTES}-byte limit (no tool has such a name)"
            ),
        );
        return Err(abort(&mut caller, error));
    }
    if args_len as usize > MAX_TOOL_ARGS_BYTES {
        let error = EvalError::new(
            ErrorKind::Exception,
            format!(
                "tool-call arguments of {args_len} bytes exceed the {MAX_TOOL_ARGS_BYTES}-byte limit"
            ),
        );
        return Err(abort(&mut caller, error));
    }
    let name = read_string(&mut caller, name_ptr, name_len, "the tool name")?;
    let args_json = read_string(&mut caller, args_ptr, args_len, "the tool arguments")?;
    let state = caller.data_mut();
    if let Some(max) = state.max_tool_calls
        && state.next_call_id > max
    {
        let error = EvalError::new(
            ErrorKind::ToolLimit,
            format!(
                "the script attempted more than {max} tool calls (the call to `{name}` was refused)"
            ),
        );
        return Err(abort(&mut caller, error));
    }
    let id = state.next_call_id;
    state.next_call_id += 1;
    state.started.push(StartedCall {
        id,
        name,
        args_json,
        line: (line != 0).then_some(line),
        column: (column != 0).then_some(column),
    });
    // Ids are 1-based and bounded by max_tool_calls or by memory long before u32::MAX.
    Ok(u32::try_from(id).unwrap_or(u32::MAX))
}

fn log(mut caller: Caller<'_, HostState>, level: u32, ptr: u32, len: u32) -> wasmtime::Result<()> {
    let level = match level {
        0 => LogLevel::Log,
        1 => LogLevel::Info,
        2 => LogLevel::Warn,
        3 => LogLevel::Error,
        4 => LogLevel::Debug,
        other => return Err(malformed(&mut caller, &format!("log level {other}"))),
    };
    // A malformed call is reported as such, before its length is charged as output.
    check_bounds(&mut caller, ptr, len, "a log message")?;
    if let Err(e) = caller.data_mut().charge_output(u64::from(len) + 1) {
        return Err(abort(&mut caller, e));
    }
    let message = read_string(&mut caller, ptr, len, "a log message")?;
    caller.data_mut().logs.push(LogEntry { level, message });
    Ok(())
}

fn finish(mut caller: Caller<'_, HostState>, ptr: u32, len: u32) -> wasmtime::Result<()> {
    if caller.data().finished.is_some() {
        return Err(malformed(&mut caller, "`finish` called twice"));
    }
    let envelope = read_bytes(&mut caller, ptr, len, "the outcome")?;
    caller.data_mut().finished = Some(envelope);
    Ok(())
}

/// Where the guest's exports are, resolved once per module: binding an instance is then an index
/// lookup per export instead of a search by name.
pub(crate) struct GuestLayout {
    version: Option<ModuleExport>,
    initialize: Option<ModuleExport>,
    init: Option<ModuleExport>,
    memory: Option<ModuleExport>,
    alloc: Option<ModuleExport>,
    run: Option<ModuleExport>,
    resume: Option<ModuleExport>,
}

impl GuestLayout {
    /// The layout of `module`'s exports.
    pub fn new(module: &Module) -> Self {
        let export = |name| module.get_export_index(name);
        GuestLayout {
            version: export(exports::ABI_VERSION),
            initialize: export(exports::INITIALIZE),
            init: export(exports::INIT),
            memory: export(exports::MEMORY),
            alloc: export(exports::ALLOC),
            run: export(exports::RUN),
            resume: export(exports::RESUME),
        }
    }
}

/// The function export `name` of `instance`, at `export`.
fn func(
    store: &mut Store<HostState>,
    instance: &Instance,
    export: Option<&ModuleExport>,
    name: &str,
) -> wasmtime::Result<Func> {
    export
        .and_then(|e| instance.get_module_export(&mut *store, e))
        .and_then(Extern::into_func)
        .ok_or_else(|| wasmtime::format_err!("failed to find function export `{name}`"))
}

/// Typed handles to the guest's exports.
pub(crate) struct GuestExports {
    pub memory: Memory,
    pub alloc: TypedFunc<u32, u32>,
    pub run: TypedFunc<(u32, u32, u32), u32>,
    pub resume: TypedFunc<(u32, u32, u32, u32), u32>,
}

impl GuestExports {
    /// Looks the exports up and checks the ABI version; with `init`, runs `_initialize` and
    /// `cm_init` when the module has them (a snapshotted module has neither). A sandbox being
    /// restored from a saved eval is not initialised: its saved memory already is.
    pub fn bind(
        store: &mut Store<HostState>,
        instance: &Instance,
        layout: &GuestLayout,
        init: bool,
    ) -> wasmtime::Result<Self> {
        let version = func(
            store,
            instance,
            layout.version.as_ref(),
            exports::ABI_VERSION,
        )?
        .typed::<(), u32>(&*store)?
        .call(&mut *store, ())?;
        if version != ABI_VERSION {
            wasmtime::bail!(
                "the guest speaks ABI version {version}, this host speaks {ABI_VERSION}"
            );
        }
        for (export, name) in [
            (&layout.initialize, exports::INITIALIZE),
            (&layout.init, exports::INIT),
        ] {
            if let Some(export) = export.as_ref().filter(|_| init) {
                func(store, instance, Some(export), name)?
                    .typed::<(), ()>(&*store)?
                    .call(&mut *store, ())?;
            }
        }
        let memory = layout
            .memory
            .as_ref()
            .and_then(|e| instance.get_module_export(&mut *store, e))
            .and_then(Extern::into_memory)
            .ok_or_else(|| wasmtime::format_err!("the guest exports no memory"))?;
        store.data_mut().guest_memory = Some(memory);
        Ok(GuestExports {
            memory,
            alloc: func(store, instance, layout.alloc.as_ref(), exports::ALLOC)?.typed(&*store)?,
            run: func(store, instance, layout.run.as_ref(), exports::RUN)?.typed(&*store)?,
            resume: func(store, instance, layout.resume.as_ref(), exports::RESUME)?
                .typed(&*store)?,
        })
    }

    /// Copies `bytes` into a fresh guest buffer and returns its pointer.
    pub fn write(&self, store: &mut Store<HostState>, bytes: &[u8]) -> wasmtime::Result<u32> {
        let len = u32::try_from(bytes.len())
            .map_err(|_| wasmtime::format_err!("input of {} bytes is too large", bytes.len()))?;
        let ptr = self.alloc.call(&mut *store, len)?;
        self.memory
            .write(&mut *store, ptr as usize, bytes)
            .map_err(|_| {
                wasmtime::format_err!("the guest's cm_alloc returned a buffer outside its memory")
            })?;
        Ok(ptr)
    }
}
