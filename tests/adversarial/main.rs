//! The adversarial suite: attacks on codemode as a script, a client and an upstream would make
//! them, one table line per case (see SECURITY.md). Every case asserts the same invariants:
//! the attack is contained, the host stays alive (the next eval runs), the error kind is
//! classified (`internal` fails the case), no denied tool ran (by the ledger and by the
//! upstream's own side effects on disk), and the audit log has exactly one `eval` record and one
//! `tool_call` record per attempt.
#![expect(
    clippy::print_stderr,
    reason = "a test prints the output of the servers it started, for a failure"
)]

mod abi;
mod escape;
mod exhaustion;
mod harness;
mod http;
mod injection;
mod outcome;
mod policy;
mod upstreams;
