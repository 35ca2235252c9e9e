//! The `codemode` binary: the command line ([`cli`]) over the library crates.

mod cli;

/// The binary's allocator is mimalloc. Under glibc's malloc a busy `serve --http` kept freed
/// memory in its per-thread arenas and its RSS crept up for as long as the load lasted (+4.7 MiB
/// of malloc'd-but-free memory over a 10-minute soak at 64 clients, with the memory in use flat).
/// mimalloc hands freed pages back to the kernel, as jemalloc did before it at the same speed,
/// and builds in seconds where jemalloc's configure and make took 81 s of a cold release build.
/// Measurements in docs/PERFORMANCE.md ("The soak's RSS"). The library crates keep whatever
/// allocator their embedder chooses.
#[cfg(all(target_os = "linux", not(target_env = "musl")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
