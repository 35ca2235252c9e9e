//! Per-eval limits: [`EvalOptions`]. Nothing is unlimited unless asked for.

use std::time::Duration;

use crate::config::RuntimeConfig;
use crate::error::InvalidConfig;

/// [`EvalOptions::DEFAULT_FUEL`], for readers of the config's limits that name it here.
pub const DEFAULT_FUEL: u64 = EvalOptions::DEFAULT_FUEL;
/// [`EvalOptions::DEFAULT_MAX_TOOL_CALLS`], for readers of the config's limits that name it
/// here.
pub const DEFAULT_MAX_TOOL_CALLS: u64 = EvalOptions::DEFAULT_MAX_TOOL_CALLS;

/// Limits and identity of one eval.
///
/// Every limit has its own [`crate::ErrorKind`] when exceeded, except
/// [`EvalOptions::max_concurrent_tool_calls`], which queues calls instead of failing them.
/// Setters take and return `&mut Self`, so they chain. Options are checked by
/// [`EvalOptions::validate`] when an eval starts: invalid ones end the eval at once with
/// [`crate::ErrorKind::InvalidOptions`].
///
/// ```
/// use codemode_runtime::{EvalOptions, RuntimeConfig};
/// use std::time::Duration;
/// let mut opts = EvalOptions::default();
/// opts.fuel(Some(1_000_000)).timeout(Some(Duration::from_millis(500)));
/// assert_eq!(opts.fuel, Some(1_000_000));
/// assert_eq!(opts.memory, 64 << 20);
/// assert!(opts.validate(&RuntimeConfig::default()).is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EvalOptions {
    /// WebAssembly instructions the eval may execute; `None` = unlimited. Default
    /// [`Self::DEFAULT_FUEL`]. Ignored (and `fuel_used` is 0) when the runtime was built with
    /// fuel off.
    pub fuel: Option<u64>,
    /// Linear-memory bytes; also bounds the QuickJS heap. Default [`Self::DEFAULT_MEMORY`]; at
    /// most the runtime's [`crate::RuntimeConfig::max_memory`] ([`EvalOptions::validate`]).
    pub memory: u64,
    /// Wall-clock time for the whole eval, tool calls included; `None` = unlimited. Default
    /// [`Self::DEFAULT_TIMEOUT`]. Time a [`crate::ToolHost`] spends under
    /// [`crate::CallContext::pause_timeout`] (a human deciding) does not count.
    pub timeout: Option<Duration>,
    /// Bytes of console output plus the JSON result. Default [`Self::DEFAULT_MAX_OUTPUT`].
    pub max_output: u64,
    /// Tool calls the script may start; `None` = unlimited. Default
    /// [`Self::DEFAULT_MAX_TOOL_CALLS`].
    pub max_tool_calls: Option<u64>,
    /// Tool calls in flight at once; further calls wait (no error). Default
    /// [`Self::DEFAULT_MAX_CONCURRENT_TOOL_CALLS`]; at least 1 ([`EvalOptions::validate`]).
    pub max_concurrent_tool_calls: usize,
}

impl EvalOptions {
    /// Default fuel budget: 20 billion WebAssembly instructions (tens of seconds of compute).
    pub const DEFAULT_FUEL: u64 = 20_000_000_000;
    /// Default linear-memory limit: 64 MiB.
    pub const DEFAULT_MEMORY: u64 = 64 << 20;
    /// Default wall-clock timeout: 30 s, time in tool calls included.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default cap on logs + result: 1 MiB.
    pub const DEFAULT_MAX_OUTPUT: u64 = 1 << 20;
    /// Default cap on the number of tool calls of one eval: 1000.
    pub const DEFAULT_MAX_TOOL_CALLS: u64 = 1000;
    /// Default cap on tool calls running at once within one eval: 16 (more wait their turn).
    pub const DEFAULT_MAX_CONCURRENT_TOOL_CALLS: usize = 16;
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            fuel: Some(Self::DEFAULT_FUEL),
            memory: Self::DEFAULT_MEMORY,
            timeout: Some(Self::DEFAULT_TIMEOUT),
            max_output: Self::DEFAULT_MAX_OUTPUT,
            max_tool_calls: Some(Self::DEFAULT_MAX_TOOL_CALLS),
            max_concurrent_tool_calls: Self::DEFAULT_MAX_CONCURRENT_TOOL_CALLS,
        }
    }
}

impl EvalOptions {
    /// Sets [`EvalOptions::fuel`]: WebAssembly instructions the eval may execute, `None` for
    /// unlimited. Default [`Self::DEFAULT_FUEL`] (20 billion).
    pub fn fuel(&mut self, fuel: Option<u64>) -> &mut Self {
        self.fuel = fuel;
        self
    }

    /// Sets [`EvalOptions::memory`], the linear-memory limit in bytes. Default
    /// [`Self::DEFAULT_MEMORY`] (64 MiB); at most the runtime's
    /// [`crate::RuntimeConfig::max_memory`] (256 MiB by default).
    pub fn memory(&mut self, bytes: u64) -> &mut Self {
        self.memory = bytes;
        self
    }

    /// Sets [`EvalOptions::timeout`], the wall-clock limit of the whole eval, `None` for
    /// unlimited. Default [`Self::DEFAULT_TIMEOUT`] (30 s).
    pub fn timeout(&mut self, timeout: Option<Duration>) -> &mut Self {
        self.timeout = timeout;
        self
    }

    /// Sets [`EvalOptions::max_output`], the bytes of logs plus result. Default
    /// [`Self::DEFAULT_MAX_OUTPUT`] (1 MiB).
    pub fn max_output(&mut self, bytes: u64) -> &mut Self {
        self.max_output = bytes;
        self
    }

    /// Sets [`EvalOptions::max_tool_calls`], the tool calls the script may start, `None` for
    /// unlimited. Default [`Self::DEFAULT_MAX_TOOL_CALLS`] (1000).
    pub fn max_tool_calls(&mut self, calls: Option<u64>) -> &mut Self {
        self.max_tool_calls = calls;
        self
    }

    /// Sets [`EvalOptions::max_concurrent_tool_calls`], the tool calls in flight at once.
    /// Default [`Self::DEFAULT_MAX_CONCURRENT_TOOL_CALLS`] (16); at least 1.
    pub fn max_concurrent_tool_calls(&mut self, calls: usize) -> &mut Self {
        self.max_concurrent_tool_calls = calls;
        self
    }

    /// Checks the options against their documented ranges and against `config`, the
    /// configuration of the runtime that runs the eval. Every eval calls it first.
    ///
    /// # Errors
    /// [`InvalidConfig`] naming the first option out of range:
    /// `max_concurrent_tool_calls` of 0, or `memory` above the runtime's
    /// [`crate::RuntimeConfig::max_memory`].
    pub fn validate(&self, config: &RuntimeConfig) -> Result<(), InvalidConfig> {
        if self.max_concurrent_tool_calls == 0 {
            return Err(InvalidConfig::new(
                "max_concurrent_tool_calls",
                "must be at least 1 (it is 0)",
            ));
        }
        if self.memory > config.max_memory {
            return Err(InvalidConfig::new(
                "memory",
                format!(
                    "must be at most the runtime's max_memory of {} bytes (it is {})",
                    config.max_memory, self.memory
                ),
            ));
        }
        Ok(())
    }
}

/// The largest unit [`LargestUnit::spell`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LargestUnit {
    /// Seconds: `90s`, `3600s`.
    Seconds,
    /// Minutes and seconds: `1m30s`, `60m`.
    Minutes,
}

impl LargestUnit {
    /// A limit's duration in a message, as the config and the command line spell durations:
    /// milliseconds when it is not whole seconds (`250ms`), else seconds (`2s`), and with
    /// [`LargestUnit::Minutes`] minutes and seconds from one minute on (`15m`, `1m30s`).
    ///
    /// Two largest units because two messages have long said it their way, and callers (models
    /// among them) read them: an eval's timeout (`the script exceeded its wall-clock timeout of
    /// 90s`) in seconds, `limits.maxEvalLifetime` (`the eval exceeded its lifetime of 15m`) as its
    /// config usually spells it, in minutes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use codemode_runtime::LargestUnit;
    /// assert_eq!(LargestUnit::Minutes.spell(Duration::from_millis(1500)), "1500ms");
    /// assert_eq!(LargestUnit::Seconds.spell(Duration::from_secs(90)), "90s");
    /// assert_eq!(LargestUnit::Minutes.spell(Duration::from_secs(90)), "1m30s");
    /// ```
    pub fn spell(self, d: Duration) -> String {
        let ms = d.as_millis();
        if !ms.is_multiple_of(1000) {
            return format!("{ms}ms");
        }
        let s = ms / 1000;
        match (self, s / 60, s % 60) {
            (LargestUnit::Seconds, _, _) | (LargestUnit::Minutes, 0, _) => format!("{s}s"),
            (LargestUnit::Minutes, m, 0) => format!("{m}m"),
            (LargestUnit::Minutes, m, s) => format!("{m}m{s}s"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_spelled_in_the_largest_whole_unit_allowed() {
        let cases: &[(Duration, &str, &str)] = &[
            (Duration::ZERO, "0s", "0s"),
            // Below a millisecond: nothing to show but whole seconds.
            (Duration::from_micros(500), "0s", "0s"),
            (Duration::from_millis(250), "250ms", "250ms"),
            (Duration::from_millis(1500), "1500ms", "1500ms"),
            (Duration::from_millis(60_001), "60001ms", "60001ms"),
            (Duration::from_secs(2), "2s", "2s"),
            (Duration::from_secs(59), "59s", "59s"),
            (Duration::from_secs(60), "60s", "1m"),
            (Duration::from_secs(90), "90s", "1m30s"),
            (Duration::from_secs(900), "900s", "15m"),
            (Duration::from_secs(3600), "3600s", "60m"),
        ];
        for &(d, seconds, minutes) in cases {
            assert_eq!(LargestUnit::Seconds.spell(d), seconds, "{d:?}");
            assert_eq!(LargestUnit::Minutes.spell(d), minutes, "{d:?}");
        }
    }

    #[test]
    fn the_defaults_are_valid_for_the_default_runtime() {
        assert_eq!(
            EvalOptions::default().validate(&RuntimeConfig::default()),
            Ok(())
        );
    }

    #[test]
    fn setters_chain_and_set_their_field() {
        let mut options = EvalOptions::default();
        options
            .fuel(None)
            .memory(1 << 20)
            .timeout(Some(Duration::from_secs(1)))
            .max_output(7)
            .max_tool_calls(Some(3))
            .max_concurrent_tool_calls(2);
        assert_eq!(
            options,
            EvalOptions {
                fuel: None,
                memory: 1 << 20,
                timeout: Some(Duration::from_secs(1)),
                max_output: 7,
                max_tool_calls: Some(3),
                max_concurrent_tool_calls: 2,
            }
        );
    }

    #[test]
    fn no_concurrent_tool_calls_is_invalid() {
        let mut options = EvalOptions::default();
        options.max_concurrent_tool_calls(0);
        let error = options.validate(&RuntimeConfig::default()).unwrap_err();
        assert_eq!(
            (error.field(), error.reason()),
            ("max_concurrent_tool_calls", "must be at least 1 (it is 0)")
        );
    }

    #[test]
    fn memory_above_the_runtime_maximum_is_invalid() {
        let mut config = RuntimeConfig::default();
        config.max_memory(32 << 20);
        let mut options = EvalOptions::default();
        options.memory(32 << 20);
        assert_eq!(options.validate(&config), Ok(()));
        options.memory((32 << 20) + 1);
        let error = options.validate(&config).unwrap_err();
        assert_eq!(
            (error.field(), error.reason()),
            (
                "memory",
                "must be at most the runtime's max_memory of 33554432 bytes (it is 33554433)"
            )
        );
    }
}
