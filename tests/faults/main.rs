//! Injected faults against a real `codemode serve --http` (started by the test as a child
//! process), each with nothing lost: the audit log complete, the ledger truthful, other clients
//! unaffected. Clients are the generator's MCP client of `codemode bench --http` (raw MCP over
//! keep-alive HTTP/1.1, both protocol generations); upstreams are real MCP servers: the pinned
//! peers of `tests/support` and `slow_server.py` (the Python SDK; its calls sleep or never
//! answer, and tell the test they are in flight through marker files — counters, not clocks).

mod harness;

mod audit;
mod disconnect;
mod load;
mod reload;
mod upstream;
