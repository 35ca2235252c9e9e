//! The WASI preview 1 functions the guest imports, implemented for the sandbox's empty context:
//! the only WASI the guest gets.
//!
//! They give what wasmtime-wasi gives for `WasiCtxBuilder::new()` (no preopens, environment or
//! arguments; stdin empty; stdout and stderr discarded): random bytes from the host, the host's
//! clocks, zero environment variables, writes to stdout/stderr accepted and dropped, `EBADF` for
//! any other descriptor. wasmtime-wasi is not used: its `WasiCtx` costs every eval an
//! allocation-heavy build (tables, clocks, a seeded ChaCha generator), its synchronous p1
//! descriptor functions (`fd_write`…) panic inside a tokio runtime (they start one of their
//! own), where every eval runs, and it builds the whole component model into codemode for nine
//! functions. A guest importing any other WASI function is refused when it is linked, naming
//! the import.

use std::sync::LazyLock;
use std::time::{Instant, SystemTime};

use wasmtime::{Caller, Linker};

use crate::state::HostState;

/// The import module.
const MODULE: &str = "wasi_snapshot_preview1";

// WASI preview 1 errno values. Pointers outside memory and invalid enumeration values are
// traps, as in wasmtime-wasi.
const SUCCESS: i32 = 0;
const EBADF: i32 = 8;
const EFAULT: i32 = 21;
const EINVAL: i32 = 28;
const EIO: i32 = 29;
const ESPIPE: i32 = 70;

// Clock ids.
const CLOCK_REALTIME: i32 = 0;
const CLOCK_MONOTONIC: i32 = 1;
const CLOCK_PROCESS_CPUTIME: i32 = 2;
const CLOCK_THREAD_CPUTIME: i32 = 3;

/// `fdstat` rights: `fd_read` and `fd_write`.
const RIGHT_FD_READ: u64 = 1 << 1;
const RIGHT_FD_WRITE: u64 = 1 << 6;

/// Origin of the monotonic clock (an arbitrary instant, as WASI allows).
static MONOTONIC_ORIGIN: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Defines the guest's WASI imports in `linker`.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(MODULE, "random_get", random_get)?;
    linker.func_wrap(MODULE, "clock_time_get", clock_time_get)?;
    linker.func_wrap(MODULE, "environ_sizes_get", environ_sizes_get)?;
    linker.func_wrap(MODULE, "environ_get", environ_get)?;
    linker.func_wrap(MODULE, "fd_write", fd_write)?;
    linker.func_wrap(MODULE, "fd_close", fd_close)?;
    linker.func_wrap(MODULE, "fd_fdstat_get", fd_fdstat_get)?;
    linker.func_wrap(MODULE, "fd_seek", fd_seek)?;
    linker.func_wrap(MODULE, "proc_exit", proc_exit)?;
    Ok(())
}

/// The guest's memory, as a mutable slice; `None` without an exported memory (then the result
/// is `EFAULT`: there is nowhere to write).
fn memory<'a>(caller: &'a mut Caller<'_, HostState>) -> Option<&'a mut [u8]> {
    crate::abi::guest_memory(caller).map(|memory| memory.data_mut(caller))
}

/// `len` bytes at `ptr`; outside memory, the trap wasmtime-wasi raises.
fn slice(memory: &mut [u8], ptr: i32, len: usize) -> wasmtime::Result<&mut [u8]> {
    let start = ptr as u32 as usize;
    match start.checked_add(len) {
        Some(end) if end <= memory.len() => Ok(&mut memory[start..end]),
        _ => Err(wasmtime::format_err!(
            "Pointer out of bounds: Region {{ start: {start}, len: {len} }}"
        )),
    }
}

fn write_u32(memory: &mut [u8], ptr: i32, value: u32) -> wasmtime::Result<()> {
    slice(memory, ptr, 4)?.copy_from_slice(&value.to_le_bytes());
    Ok(())
}

/// Which standard descriptor `fd` is, unless the guest closed it.
fn stdio(caller: &Caller<'_, HostState>, fd: i32) -> Option<u8> {
    let fd = u8::try_from(fd).ok().filter(|&fd| fd <= 2)?;
    (caller.data().closed_stdio & (1 << fd) == 0).then_some(fd)
}

fn random_get(mut caller: Caller<'_, HostState>, buf: i32, len: i32) -> wasmtime::Result<i32> {
    let Some(memory) = memory(&mut caller) else {
        return Ok(EFAULT);
    };
    let bytes = slice(memory, buf, len as u32 as usize)?;
    Ok(match getrandom::fill(bytes) {
        Ok(()) => SUCCESS,
        Err(_) => EIO,
    })
}

fn clock_time_get(
    mut caller: Caller<'_, HostState>,
    id: i32,
    _precision: i64,
    out: i32,
) -> wasmtime::Result<i32> {
    let now = match id {
        CLOCK_REALTIME => SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        CLOCK_MONOTONIC => u64::try_from(MONOTONIC_ORIGIN.elapsed().as_nanos()).unwrap_or(u64::MAX),
        CLOCK_PROCESS_CPUTIME | CLOCK_THREAD_CPUTIME => return Ok(EBADF),
        // As wasmtime-wasi: a clock id outside the enumeration is a trap, not an errno.
        _ => wasmtime::bail!(
            "In func wasi_snapshot_preview1::clock_time_get at convert Clockid: Invalid enum value Clockid"
        ),
    };
    let Some(memory) = memory(&mut caller) else {
        return Ok(EFAULT);
    };
    slice(memory, out, 8)?.copy_from_slice(&now.to_le_bytes());
    Ok(SUCCESS)
}

fn environ_sizes_get(
    mut caller: Caller<'_, HostState>,
    count: i32,
    size: i32,
) -> wasmtime::Result<i32> {
    let Some(memory) = memory(&mut caller) else {
        return Ok(EFAULT);
    };
    write_u32(memory, count, 0)?;
    write_u32(memory, size, 0)?;
    Ok(SUCCESS)
}

fn environ_get(_caller: Caller<'_, HostState>, _environ: i32, _buf: i32) -> i32 {
    // No environment: nothing to write.
    SUCCESS
}

fn fd_write(
    mut caller: Caller<'_, HostState>,
    fd: i32,
    iovs: i32,
    count: i32,
    out: i32,
) -> wasmtime::Result<i32> {
    match stdio(&caller, fd) {
        Some(1 | 2) => {}
        _ => return Ok(EBADF),
    }
    let Some(memory) = memory(&mut caller) else {
        return Ok(EFAULT);
    };
    // Each iovec is (pointer, length); every buffer must lie in memory, then all of it is
    // "written" (discarded).
    let size = memory.len();
    let vectors = slice(memory, iovs, (count as u32 as usize).saturating_mul(8))?;
    let mut total: u32 = 0;
    for iov in vectors.chunks_exact(8) {
        let start = u32::from_le_bytes([iov[0], iov[1], iov[2], iov[3]]) as usize;
        let len = u32::from_le_bytes([iov[4], iov[5], iov[6], iov[7]]);
        if start.checked_add(len as usize).is_none_or(|end| end > size) {
            wasmtime::bail!("Pointer out of bounds: Region {{ start: {start}, len: {len} }}");
        }
        total = match total.checked_add(len) {
            Some(total) => total,
            None => return Ok(EINVAL),
        };
    }
    write_u32(memory, out, total)?;
    Ok(SUCCESS)
}

fn fd_close(mut caller: Caller<'_, HostState>, fd: i32) -> i32 {
    match stdio(&caller, fd) {
        Some(fd) => {
            caller.data_mut().closed_stdio |= 1 << fd;
            SUCCESS
        }
        None => EBADF,
    }
}

fn fd_fdstat_get(mut caller: Caller<'_, HostState>, fd: i32, out: i32) -> wasmtime::Result<i32> {
    let rights = match stdio(&caller, fd) {
        Some(0) => RIGHT_FD_READ,
        Some(_) => RIGHT_FD_WRITE,
        None => return Ok(EBADF),
    };
    let Some(memory) = memory(&mut caller) else {
        return Ok(EFAULT);
    };
    let stat = slice(memory, out, 24)?;
    // filetype u8 (0: unknown — not a terminal), flags u16, rights base and inheriting u64.
    stat.fill(0);
    stat[8..16].copy_from_slice(&rights.to_le_bytes());
    stat[16..24].copy_from_slice(&rights.to_le_bytes());
    Ok(SUCCESS)
}

fn fd_seek(caller: Caller<'_, HostState>, fd: i32, _offset: i64, _whence: i32, _out: i32) -> i32 {
    match stdio(&caller, fd) {
        Some(_) => ESPIPE,
        None => EBADF,
    }
}

fn proc_exit(_caller: Caller<'_, HostState>, status: i32) -> wasmtime::Result<()> {
    // As wasmtime-wasi: an exit status WASI allows ends the instance with an error naming it.
    Err(match u32::try_from(status) {
        Ok(status) if status < 126 => GuestExit(status).into(),
        _ => wasmtime::Error::msg("exit with invalid exit status outside of [0..126)"),
    })
}

/// The guest called `proc_exit` with this status (wasmtime-wasi's `I32Exit`).
#[derive(Debug, thiserror::Error)]
#[error("Exited with i32 exit status {0}")]
struct GuestExit(u32);
