//! The outcome envelope the guest passes to `finish` (guest/ABI.md), read without trusting it:
//! only the error kinds a guest may report, and valid data serde_json would refuse read or
//! refused in words.

use serde::Deserialize;
use serde_json::Value;

use crate::outcome::{ErrorKind, EvalError, Warning};

/// The outcome envelope the guest passes to `finish`.
#[derive(Deserialize)]
pub(super) struct Envelope {
    pub(super) ok: bool,
    #[serde(default)]
    pub(super) result: Value,
    pub(super) error: Option<EvalError>,
    /// What the guest noticed about a script that finished (guest/ABI.md).
    #[serde(default)]
    pub(super) warnings: Vec<Warning>,
}

/// The error kinds a guest may report; the others (time, fuel, output, cancellation, the
/// sandbox's own failures) only the host observes.
const GUEST_KINDS: [ErrorKind; 3] = [
    ErrorKind::Syntax,
    ErrorKind::Exception,
    ErrorKind::MemoryLimit,
];

/// A failed script's error as its guest reported it, when it is one a guest may report: any
/// other is a malformed guest (the script cannot choose the kind, see guest/ABI.md).
pub(super) fn guest_error(error: Option<EvalError>) -> EvalError {
    match error {
        Some(error) if GUEST_KINDS.contains(&error.kind) => error,
        Some(error) => EvalError::new(
            ErrorKind::Internal,
            format!(
                "the guest reported error kind `{}`, which only the host decides",
                error.kind
            ),
        ),
        None => EvalError::new(
            ErrorKind::Internal,
            "the guest reported a failure without an error",
        ),
    }
}

/// The guest's outcome envelope. Valid data the guest may still send in a form serde_json
/// refuses is read or refused in words: an escaped lone surrogate (a JS string is UTF-16; the
/// prelude replaces them, but a script can hide one from it, e.g. behind a Proxy whose keys
/// change between reads) is read as U+FFFD; a result nested deeper than serde_json's 128 levels
/// is refused, saying so.
pub(super) fn read_envelope(bytes: &[u8]) -> Result<Envelope, EvalError> {
    let error = match serde_json::from_slice::<Envelope>(bytes) {
        Ok(envelope) => return Ok(envelope),
        Err(e) => match replace_lone_surrogates(bytes) {
            Some(fixed) => match serde_json::from_slice::<Envelope>(&fixed) {
                Ok(envelope) => return Ok(envelope),
                Err(e) => e,
            },
            None => e,
        },
    };
    let message = if error.to_string().starts_with("recursion limit exceeded") {
        "the result is nested too deeply: codemode reads at most 126 levels of arrays and objects"
            .to_string()
    } else {
        format!("the result could not be read: {error}")
    };
    Err(EvalError::new(ErrorKind::Exception, message))
}

/// `json` with every `\uXXXX` escape of a lone surrogate replaced by `\ufffd`; `None` when it
/// has none. Escapes occur only inside strings, so the text is read escape by escape.
fn replace_lone_surrogates(json: &[u8]) -> Option<Vec<u8>> {
    let unit = |at: usize| -> Option<u16> {
        let escape = json.get(at..at + 6)?;
        if escape[0] != b'\\' || escape[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&escape[2..]).ok()?, 16).ok()
    };
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < json.len() {
        if json[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(cu) = unit(i) else {
            i += 2; // another escape (`\\`, `\"`, `\n`…)
            continue;
        };
        let paired = (0xD800..=0xDBFF).contains(&cu)
            && unit(i + 6).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low));
        if paired {
            i += 12;
        } else if (0xD800..=0xDFFF).contains(&cu) {
            let buffer = out.get_or_insert_with(|| Vec::with_capacity(json.len()));
            buffer.extend_from_slice(&json[copied..i]);
            buffer.extend_from_slice(b"\\ufffd");
            i += 6;
            copied = i;
        } else {
            i += 6;
        }
    }
    let mut buffer = out?;
    buffer.extend_from_slice(&json[copied..]);
    Some(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(json: &str) -> Option<String> {
        replace_lone_surrogates(json.as_bytes()).map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn only_lone_surrogate_escapes_are_replaced() {
        assert_eq!(fixed(r#"["\ud800"]"#).as_deref(), Some(r#"["\ufffd"]"#));
        assert_eq!(fixed(r#"["\udc00x"]"#).as_deref(), Some(r#"["\ufffdx"]"#));
        assert_eq!(
            fixed(r#"{"\ud800":["\ud83d\ude00","a\udbff"]}"#).as_deref(),
            Some(r#"{"\ufffd":["\ud83d\ude00","a\ufffd"]}"#)
        );
        // A pair, an escaped backslash before `ud800`, other escapes: nothing to replace.
        for untouched in [
            r#"["\ud83d\ude00"]"#,
            r#"["\\ud800"]"#,
            r#"["\n\"\u0041"]"#,
            "[1]",
        ] {
            assert_eq!(fixed(untouched), None, "{untouched}");
        }
    }

    #[test]
    fn an_envelope_is_read_whole_or_refused_in_words() {
        let read = |json: &str| read_envelope(json.as_bytes()).map(|e| e.result);
        assert_eq!(
            read(r#"{"ok":true,"result":{"\ud800":"\udfff"}}"#),
            Ok(serde_json::json!({"\u{fffd}": "\u{fffd}"}))
        );
        let deep = format!(
            r#"{{"ok":true,"result":{}1{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let error = read(&deep).unwrap_err();
        assert_eq!(
            (error.kind, error.message.as_str()),
            (
                ErrorKind::Exception,
                "the result is nested too deeply: codemode reads at most 126 levels of arrays and objects"
            )
        );
    }
}
