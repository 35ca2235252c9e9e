//! Human-readable sizes (`64MiB`) and durations (`30s`), as written in the configuration file and
//! on the command line (`--memory 64MiB`, `--timeout 5s`).
//!
//! Hand-written because no well-kept crate reads exactly this syntax: `humantime` reads `1M` as
//! a month and `m` as a minute, accepts units such as `days` and `weeks`, and is case-sensitive;
//! `parse-size` and `bytesize` accept fractions (`1.5MiB`) and single-letter units (`1k`) whose
//! base is a guess. Whole numbers and a short, case-insensitive list of units leave nothing to
//! guess.

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
    /// A duration number other than `0` without a unit (`30` is ambiguous: seconds or
    /// milliseconds?).
    #[error(
        "`{input}` has no unit; write e.g. `{input}s` or `{input}ms` (only `0` may omit the unit)"
    )]
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
const DURATION_UNITS: &str = "ms, s, m, h, d";

/// Parses a byte size: a whole number and an optional unit, case-insensitive, with optional
/// spaces between them.
///
/// No unit (or `B`) means bytes; `KB`, `MB`, `GB`, `TB` are decimal (powers of 1000) and `KiB`,
/// `MiB`, `GiB`, `TiB` binary (powers of 1024).
///
/// ```
/// use codemode_config::parse_size;
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

/// Parses a duration: one or more whole numbers each followed by a unit (`ms`, `s`, `m`, `h`,
/// `d` (days of 24 hours), case-insensitive, optionally after spaces), e.g. `30s`, `500ms`, `2m`, `1h`, `1m30s`. A bare
/// `0` is zero (it is the same in every unit, and `--timeout 0` means "no timeout"); any other
/// bare number is refused as ambiguous.
///
/// ```
/// use std::time::Duration;
/// use codemode_config::parse_duration;
/// assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
/// assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
/// assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
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
    if rest.bytes().all(|b| b == b'0') {
        return Ok(Duration::ZERO);
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
            "d" => Duration::from_secs(number.checked_mul(86_400).ok_or_else(overflow)?),
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

    fn invalid_number(input: &str, example: &'static str) -> ParseUnitError {
        ParseUnitError::InvalidNumber {
            input: input.into(),
            example,
        }
    }

    fn unknown_unit(input: &str, unit: &str, expected: &'static str) -> ParseUnitError {
        ParseUnitError::UnknownUnit {
            input: input.into(),
            unit: unit.into(),
            expected,
        }
    }

    fn overflow(input: &str) -> ParseUnitError {
        ParseUnitError::Overflow {
            input: input.into(),
        }
    }

    fn missing_unit(input: &str) -> ParseUnitError {
        ParseUnitError::MissingUnit {
            input: input.into(),
        }
    }

    #[test]
    fn sizes() {
        let cases: &[(&str, Result<u64, ParseUnitError>)] = &[
            ("0", Ok(0)),
            ("1000", Ok(1000)),
            ("1000B", Ok(1000)),
            ("1000 b", Ok(1000)),
            ("512KiB", Ok(512 * 1024)),
            ("64MiB", Ok(64 << 20)),
            ("64 MiB", Ok(64 << 20)),
            ("64mib", Ok(64 << 20)),
            ("1GiB", Ok(1 << 30)),
            ("2TiB", Ok(2 << 40)),
            ("10MB", Ok(10_000_000)),
            ("3kb", Ok(3000)),
            ("1GB", Ok(1_000_000_000)),
            ("4TB", Ok(4_000_000_000_000)),
            (" 7 ", Ok(7)),
            ("18446744073709551615", Ok(u64::MAX)),
            ("", Err(ParseUnitError::Empty)),
            ("   ", Err(ParseUnitError::Empty)),
            ("MiB", Err(invalid_number("MiB", "64MiB"))),
            ("-1", Err(invalid_number("-1", "64MiB"))),
            ("1.5MiB", Err(unknown_unit("1.5MiB", ".5MiB", SIZE_UNITS))),
            (
                "12 parsecs",
                Err(unknown_unit("12 parsecs", "parsecs", SIZE_UNITS)),
            ),
            ("1k", Err(unknown_unit("1k", "k", SIZE_UNITS))),
            (
                "18446744073709551616",
                Err(overflow("18446744073709551616")),
            ),
            ("20000000TiB", Err(overflow("20000000TiB"))),
        ];
        for (input, want) in cases {
            assert_eq!(parse_size(input), *want, "{input:?}");
        }
    }

    #[test]
    fn durations() {
        let secs = Duration::from_secs;
        let cases: &[(&str, Result<Duration, ParseUnitError>)] = &[
            ("30s", Ok(secs(30))),
            ("500ms", Ok(Duration::from_millis(500))),
            ("2m", Ok(secs(120))),
            ("1h", Ok(secs(3600))),
            ("7d", Ok(secs(7 * 86_400))),
            ("1d12h", Ok(secs(36 * 3600))),
            ("1m30s", Ok(secs(90))),
            ("1h 2m 3s 4ms", Ok(Duration::from_millis(3_723_004))),
            ("0s", Ok(Duration::ZERO)),
            ("0", Ok(Duration::ZERO)),
            ("000", Ok(Duration::ZERO)),
            (" 0 ", Ok(Duration::ZERO)),
            ("5S", Ok(secs(5))),
            ("2 M", Ok(secs(120))),
            ("", Err(ParseUnitError::Empty)),
            ("30", Err(missing_unit("30"))),
            (" 30 ", Err(missing_unit("30"))),
            ("1m30", Err(missing_unit("1m30"))),
            ("s", Err(invalid_number("s", "30s"))),
            ("-1s", Err(invalid_number("-1s", "30s"))),
            (
                "3 days",
                Err(unknown_unit("3 days", "days", DURATION_UNITS)),
            ),
            ("1.5s", Err(unknown_unit("1.5s", ".", DURATION_UNITS))),
            ("1M2", Err(missing_unit("1M2"))),
            (
                "99999999999999999999h",
                Err(overflow("99999999999999999999h")),
            ),
            (
                "9999999999999999999h",
                Err(overflow("9999999999999999999h")),
            ),
            (
                "18446744073709551615s 1s",
                Err(overflow("18446744073709551615s 1s")),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parse_duration(input), *want, "{input:?}");
        }
    }

    #[test]
    fn messages() {
        let cases: &[(ParseUnitError, &str)] = &[
            (ParseUnitError::Empty, "empty value"),
            (
                invalid_number("MiB", "64MiB"),
                "`MiB` does not start with a whole number (e.g. 64MiB)",
            ),
            (
                unknown_unit("3 days", "days", DURATION_UNITS),
                "unknown unit `days` in `3 days`; expected one of ms, s, m, h, d",
            ),
            (
                missing_unit("30"),
                "`30` has no unit; write e.g. `30s` or `30ms` (only `0` may omit the unit)",
            ),
            (
                overflow("9999999999999999999h"),
                "`9999999999999999999h` is too large",
            ),
        ];
        for (error, want) in cases {
            assert_eq!(error.to_string(), *want);
        }
    }
}
