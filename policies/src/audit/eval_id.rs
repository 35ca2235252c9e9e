//! The `eval_id` of audit records: unique across the processes writing one directory.

use std::sync::OnceLock;

use codemode_runtime::EvalId;

/// This process's prefix: 64 random bits as 16 hex digits, drawn once.
fn process_prefix() -> &'static str {
    static PREFIX: OnceLock<String> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let mut bytes = [0u8; 8];
        if getrandom::fill(&mut bytes).is_err() {
            // No OS randomness: the process id and the start time still differ between the
            // processes of one machine.
            use sha2::Digest;
            let seed = format!("{}{:?}", std::process::id(), std::time::SystemTime::now());
            bytes.copy_from_slice(&sha2::Sha256::digest(seed.as_bytes())[..8]);
        }
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    })
}

/// The `eval_id` written in audit records (`tool_call` and `eval` alike) for the runtime's
/// `id`: `<prefix>-<n>`, e.g. `7f3a9c01d2e4b5a6-1`, where the prefix is random per process and
/// `n` is the runtime's number. The runtime's numbers restart at 1 in every process; the
/// prefix keeps the ids of processes sharing an audit directory apart.
pub fn audit_eval_id(id: EvalId) -> String {
    format!("{}-{}", process_prefix(), id.0)
}
