//! Readers of the values the policy sections share: counts and seconds. Each
//! records its error in the [`Reader`] and returns `None`, as the reader's own checks do.

use std::time::Duration;

use serde_json::Value;

use crate::error::ConfigErrorKind;
use crate::reader::{JsonPath, Reader, describe};

/// A positive number of seconds (fractions allowed), e.g. `timeoutSeconds`.
pub fn positive_seconds(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<Duration> {
    let secs = v.as_f64().filter(|s| *s > 0.0);
    match secs.and_then(|s| Duration::try_from_secs_f64(s).ok()) {
        Some(d) => Some(d),
        None => {
            r.error(
                path,
                ConfigErrorKind::InvalidValue,
                format!(
                    "expected a positive number of seconds, found {}",
                    describe(v)
                ),
            );
            None
        }
    }
}

/// A whole number of at least 1.
pub fn positive(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<usize> {
    match r.u64(v, path).map(usize::try_from) {
        Some(Ok(0)) => {
            r.error(path, ConfigErrorKind::InvalidValue, "must be at least 1");
            None
        }
        Some(Ok(n)) => Some(n),
        Some(Err(_)) => {
            r.error(path, ConfigErrorKind::InvalidValue, "too large");
            None
        }
        None => None,
    }
}
