//! The catalog of tools a script can call: what `search_tools` ranks and `get_tools` describes.
//!
//! Plain data, no MCP types: the server fills it from the upstream tool lists and the built-in
//! tools.

mod observed;
mod search;
mod tool;
mod typescript;

pub(crate) use observed::ObservedResults;
pub use observed::ObservedType;
pub use search::SearchHit;
pub use tool::ToolInfo;
pub(crate) use typescript::compact_type;
