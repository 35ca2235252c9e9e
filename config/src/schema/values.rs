//! The value types several sections share, as the file writes them.

use schemars::JsonSchema;
use serde::Deserialize;

/// A size: a string with a unit (`"64MiB"`, `"512KiB"`, `"10MB"`, `"1000"`) or a whole number
/// of bytes. Never zero.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum Size {
    /// With a unit: `B`, `KB`/`KiB`, `MB`/`MiB`, `GB`/`GiB` (or none: bytes).
    Text(String),
    /// Bytes.
    Bytes(#[schemars(range(min = 1))] u64),
}

/// A duration: a number with a unit, `"500ms"`, `"30s"`, `"2m"`, `"1h"`.
pub(crate) type Duration = String;

/// A number of seconds (fractions allowed), greater than zero.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
pub(crate) struct Seconds(#[schemars(range(min = 0))] pub(crate) f64);

/// One of the risk levels, lowest first.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Risk {
    /// Reads, harmless calls.
    Low,
    /// The default level.
    Medium,
    /// Writes and other calls with effects.
    High,
    /// Calls a human must look at closely.
    Critical,
}

/// What a call gets: `"allow"`, `"deny"` or `"ask"` (a human decides).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Disposition {
    /// It runs.
    Allow,
    /// It fails with a denial the script can catch.
    Deny,
    /// A human approves or declines it.
    Ask,
}

/// Tool-name globs (`fs__*`, `time__now`); `*` matches across `__`.
pub(crate) type Globs = Vec<String>;
