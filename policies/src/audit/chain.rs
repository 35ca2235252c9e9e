//! The hash chain that makes an audit file tamper-evident.
//!
//! Every line of a file ends with two fields the writer adds after the record's own:
//! `…,"prev_hash":"P","hash":"H"}`.
//! - `H` is the hash of the line's *body*: the line's exact bytes without its `,"hash":"H"`
//!   field, i.e. everything up to and including `"prev_hash":"P"`, closed with `}`.
//!   Verification therefore works on the bytes as written, never on a re-serialisation.
//! - `P` is the `hash` of the previous line of the same file; for the first line, the
//!   *genesis* hash of the file's name ([`genesis`]: the hash of `codemode-audit:` followed by
//!   the name, e.g. `codemode-audit:2024-05-01.jsonl`), so a file renamed or moved under
//!   another day's name does not verify either.
//!
//! "The hash" is hex SHA-256, or hex HMAC-SHA-256 under an [`AuditKey`] (`audit.keyEnv`), so
//! that without the key nobody can recompute a chain after changing a record.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use codemode_config::AuditKey;

/// The prefix hashed before a file's name for its genesis hash.
const GENESIS_PREFIX: &str = "codemode-audit:";

/// The hash of `bytes`: hex SHA-256, or hex HMAC-SHA-256 under `key`.
pub fn chain_hash(key: Option<&AuditKey>, bytes: &[u8]) -> String {
    match key {
        None => format!("{:x}", Sha256::digest(bytes)),
        Some(key) => {
            // HMAC takes keys of any length: `new_from_slice` cannot fail for it.
            let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key.as_bytes())
                .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
            mac.update(bytes);
            format!("{:x}", mac.finalize().into_bytes())
        }
    }
}

/// The `prev_hash` of a file's first line: the hash of `codemode-audit:<file_name>`.
pub fn genesis(key: Option<&AuditKey>, file_name: &str) -> String {
    chain_hash(key, format!("{GENESIS_PREFIX}{file_name}").as_bytes())
}

/// Chains a serialised record (`{…}`, without a newline) after `prev_hash`: returns the
/// line to write (without newline) and its hash.
pub(super) fn seal(key: Option<&AuditKey>, record_json: &str, prev_hash: &str) -> (String, String) {
    let open = record_json.strip_suffix('}').unwrap_or(record_json);
    let sep = if open.ends_with('{') { "" } else { "," };
    let body = format!("{open}{sep}\"prev_hash\":\"{prev_hash}\"}}");
    let hash = chain_hash(key, body.as_bytes());
    let line = format!("{}{}\"hash\":\"{hash}\"}}", &body[..body.len() - 1], ",");
    (line, hash)
}

/// Splits a written line into its body (the bytes that were hashed) and its `hash` field;
/// `None` when the line does not end with a well-formed `,"hash":"<64 hex>"}`.
pub(super) fn unseal(line: &str) -> Option<(String, &str)> {
    const TAIL: usize = ",\"hash\":\"".len() + 64 + "\"}".len();
    let start = line.len().checked_sub(TAIL)?;
    let tail = line.get(start..)?;
    let hash = tail.strip_prefix(",\"hash\":\"")?.strip_suffix("\"}")?;
    if !hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    Some((format!("{}}}", &line[..start]), hash))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_and_hmac_known_values() {
        // FIPS 180-2 and RFC 4231 test case 2.
        assert_eq!(
            chain_hash(None, b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let key = AuditKey::new("Jefe");
        assert_eq!(
            chain_hash(Some(&key), b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(format!("{key:?}"), "AuditKey(<redacted>)");
        assert_eq!(
            genesis(None, "2024-05-01.jsonl"),
            chain_hash(None, b"codemode-audit:2024-05-01.jsonl")
        );
        assert_ne!(
            genesis(Some(&key), "2024-05-01.jsonl"),
            genesis(None, "2024-05-01.jsonl")
        );
    }

    #[test]
    fn seal_then_unseal() {
        let (line, hash) = seal(None, r#"{"a":1}"#, "p");
        assert_eq!(
            line,
            format!(r#"{{"a":1,"prev_hash":"p","hash":"{hash}"}}"#)
        );
        assert_eq!(hash, chain_hash(None, br#"{"a":1,"prev_hash":"p"}"#));
        let (body, h) = unseal(&line).unwrap();
        assert_eq!(
            (body.as_str(), h),
            (r#"{"a":1,"prev_hash":"p"}"#, hash.as_str())
        );
        let (line, _) = seal(None, "{}", "p");
        assert!(line.starts_with(r#"{"prev_hash":"p","hash":""#), "{line}");
        for bad in [
            "",
            r#"{"a":1}"#,
            &line.replace("\"}", "\" }"),
            &format!(r#"{{"hash":"{}"}}"#, "G".repeat(64)),
        ] {
            assert_eq!(unseal(bad), None, "{bad}");
        }
    }
}
