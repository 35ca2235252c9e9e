//! The `codemode` binary: everything lives in `codemode_host::cli`.

fn main() -> std::process::ExitCode {
    codemode_host::cli::main()
}
