//! Human-readable sizes (`64MiB`) and durations (`30s`), as written in the configuration file and
//! on the command line (`--memory 64MiB`, `--timeout 5s`).

use std::time::Duration;

/// Why a size or a duration did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseUnitError {
    /// The text is empty (or only whitespace).
    #[error("empty value")]
    Empty,
    /// The text does not start with a whole number.
    #[error("`{input}` does not start with a whole number (e.g. {example})")]
    InvalidNumber {
        /// The text as given.
        input: String,
        /// A valid example, for the message.
        example: &'static str,
    },
    /// The unit after the number is not one we know.
    #[error("unknown unit `{unit}` in `{input}`; expected one of {expected}")]
    UnknownUnit {
        /// The text as given.
        input: String,
        /// The unit as written.
        unit: String,
        /// The accepted units, for the message.
        expected: &'static str,
    },
    /// A duration number without a unit (`30` is ambiguous: seconds or milliseconds?).
    #[error("`{input}` has no unit; write e.g. `{input}s` or `{input}ms`")]
    MissingUnit {
        /// The text as given.
        input: String,
    },
    /// The value does not fit (in `u64` bytes, or in a [`Duration`]).
    #[error("`{input}` is too large")]
    Overflow {
        /// The text as given.
        input: String,
    },
}

const SIZE_UNITS: &str = "B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (powers of 1024)";
const DURATION_UNITS: &str = "ms, s, m, h";

/// Parses a byte size: a whole number and an optional unit, case-insensitive, with optional
/// spaces between them.
///
/// No unit (or `B`) means bytes; `KB`, `MB`, `GB`, `TB` are decimal (powers of 1000) and `KiB`,
/// `MiB`, `GiB`, `TiB` binary (powers of 1024).
///
/// ```
/// use codemode_policies::parse_size;
/// assert_eq!(parse_size("64MiB").unwrap(), 64 * 1024 * 1024);
/// assert_eq!(parse_size("10MB").unwrap(), 10_000_000);
/// assert_eq!(parse_size("1000").unwrap(), 1000);
/// assert!(parse_size("12 parsecs").is_err());
/// ```
///
/// # Errors
///
/// [`ParseUnitError`] when the text is empty, has no leading number, has an unknown unit, or
/// the size does not fit in a `u64`.
pub fn parse_size(input: &str) -> Result<u64, ParseUnitError> {
    let text = input.trim();
    if text.is_empty() {
        return Err(ParseUnitError::Empty);
    }
    let (number, unit) = split_number(text, input, "64MiB")?;
    let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => {
            return Err(ParseUnitError::UnknownUnit {
                input: input.to_string(),
                unit: unit.to_string(),
                expected: SIZE_UNITS,
            });
        }
    };
    number
        .checked_mul(multiplier)
        .ok_or_else(|| ParseUnitError::Overflow {
            input: input.to_string(),
        })
}

/// Parses a duration: one or more whole numbers each followed by a unit (`ms`, `s`, `m`, `h`),
/// e.g. `30s`, `500ms`, `2m`, `1h`, `1m30s`. A bare number is refused as ambiguous.
///
/// ```
/// use std::time::Duration;
/// use codemode_policies::parse_duration;
/// assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
/// assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
/// assert!(parse_duration("30").is_err());
/// ```
///
/// # Errors
///
/// [`ParseUnitError`] when the text is empty, a number or a unit is missing or unknown, or the
/// total overflows.
pub fn parse_duration(input: &str) -> Result<Duration, ParseUnitError> {
    let mut rest = input.trim();
    if rest.is_empty() {
        return Err(ParseUnitError::Empty);
    }
    let overflow = || ParseUnitError::Overflow {
        input: input.to_string(),
    };
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let (number, after) = split_number(rest, input, "30s")?;
        let unit_len = after
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let part = match unit.trim().to_ascii_lowercase().as_str() {
            "" => {
                return Err(ParseUnitError::MissingUnit {
                    input: input.trim().to_string(),
                });
            }
            "ms" => Duration::from_millis(number),
            "s" => Duration::from_secs(number),
            "m" => Duration::from_secs(number.checked_mul(60).ok_or_else(overflow)?),
            "h" => Duration::from_secs(number.checked_mul(3600).ok_or_else(overflow)?),
            _ => {
                return Err(ParseUnitError::UnknownUnit {
                    input: input.to_string(),
                    unit: unit.trim().to_string(),
                    expected: DURATION_UNITS,
                });
            }
        };
        total = total.checked_add(part).ok_or_else(overflow)?;
        rest = next.trim_start();
    }
    Ok(total)
}

/// Splits `text` into its leading whole number and the rest (with leading spaces removed).
fn split_number<'t>(
    text: &'t str,
    input: &str,
    example: &'static str,
) -> Result<(u64, &'t str), ParseUnitError> {
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if digits == 0 {
        return Err(ParseUnitError::InvalidNumber {
            input: input.to_string(),
            example,
        });
    }
    let number = text[..digits]
        .parse::<u64>()
        .map_err(|_| ParseUnitError::Overflow {
            input: input.to_string(),
        })?;
    Ok((number, text[digits..].trim_start()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let ok: &[(&str, u64)] = &[
            ("0", 0),
            ("1000", 1000),
            ("1000B", 1000),
            ("512KiB", 512 * 1024),
            ("64MiB", 64 << 20),
            ("64 MiB", 64 << 20),
            ("64mib", 64 << 20),
            ("1GiB", 1 << 30),
            ("2TiB", 2 << 40),
            ("10MB", 10_000_000),
            ("3kb", 3000),
            ("1GB", 1_000_000_000),
            (" 7 ", 7),
        ];
        for (input, want) in ok {
            assert_eq!(parse_size(input), Ok(*want), "{input}");
        }
        let bad: &[(&str, &str)] = &[
            ("", "empty"),
            ("MiB", "whole number"),
            ("-1", "whole number"),
            ("1.5MiB", "unknown unit `.5MiB`"),
            ("12 parsecs", "unknown unit `parsecs`"),
            ("99999999999999999999", "too large"),
            ("20000000TiB", "too large"),
        ];
        for (input, want) in bad {
            let err = parse_size(input).unwrap_err().to_string();
            assert!(err.contains(want), "{input}: {err}");
        }
    }

    #[test]
    fn durations() {
        let ok: &[(&str, Duration)] = &[
            ("30s", Duration::from_secs(30)),
            ("500ms", Duration::from_millis(500)),
            ("2m", Duration::from_secs(120)),
            ("1h", Duration::from_secs(3600)),
            ("1m30s", Duration::from_secs(90)),
            ("1h 2m 3s 4ms", Duration::from_millis(3_723_004)),
            ("0s", Duration::ZERO),
            ("5S", Duration::from_secs(5)),
        ];
        for (input, want) in ok {
            assert_eq!(parse_duration(input), Ok(*want), "{input}");
        }
        let bad: &[(&str, &str)] = &[
            ("", "empty"),
            ("30", "has no unit"),
            ("1m30", "has no unit"),
            ("s", "whole number"),
            ("3 days", "unknown unit `days`"),
            ("1.5s", "unknown unit `.`"),
            ("99999999999999999999h", "too large"),
            ("9999999999999999999h", "too large"),
        ];
        for (input, want) in bad {
            let err = parse_duration(input).unwrap_err().to_string();
            assert!(err.contains(want), "{input}: {err}");
        }
    }
}
