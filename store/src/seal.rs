//! Sealing: every record is encrypted and authenticated with XChaCha20-Poly1305 (RustCrypto's
//! `chacha20poly1305`) before it reaches a store, so that a store reader learns nothing of the
//! tool results a saved eval holds, and a store writer can neither forge a record nor move one
//! to another key name (the name is authenticated data).
//!
//! A sealed record is:
//!
//! ```text
//! [0]      format version (1)
//! [1..9]   key id: the first 8 bytes of SHA-256("codemode state key id" ‖ key)
//! [9..33]  nonce (24 random bytes; XChaCha's nonces are long enough to draw at random)
//! [33..]   ciphertext of (deadline: u64 little-endian Unix milliseconds ‖ payload), then the
//!          16-byte tag
//! ```
//!
//! with the header (bytes 0..9) and the record's key name as associated data. The deadline is
//! inside the authenticated plaintext, so a writer who extends a record's life in the store
//! (a file's header, a Redis TTL) does not extend it for codemode. The key id lets a node say
//! "sealed under another key" rather than "altered" when the nodes of a cluster were given
//! different keys; it is derived one-way and tells nothing about the key.

use chacha20poly1305::aead::inout::InOutBuf;
use chacha20poly1305::{AeadInOut, Key, KeyInit, Tag, XChaCha20Poly1305, XNonce};
use sha2::{Digest, Sha256};

use super::key::{StateKey, hex};

const VERSION: u8 = 1;
const KEY_ID_LEN: usize = 8;
const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;
const HEADER_LEN: usize = 1 + KEY_ID_LEN;
const BODY_START: usize = HEADER_LEN + NONCE_LEN;
/// The smallest sealed record: header, nonce, the deadline, the tag.
pub const MIN_SEALED_LEN: usize = BODY_START + 8 + TAG_LEN;
/// What sealing adds to a payload, in bytes.
pub const SEAL_OVERHEAD: usize = MIN_SEALED_LEN;
const AAD_DOMAIN: &[u8] = b"codemode-store-v1\0";

/// Why a sealed record did not open. The record's bytes are never part of a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// Shorter than any sealed record.
    #[error(
        "it is {len} bytes, shorter than any sealed record ({MIN_SEALED_LEN}): truncated, or not a codemode record"
    )]
    TooShort {
        /// Its length.
        len: usize,
    },
    /// A format this codemode does not read.
    #[error("it has format version {version}; this codemode reads version {VERSION}")]
    UnknownVersion {
        /// The version byte found.
        version: u8,
    },
    /// Sealed under another key.
    #[error(
        "it was sealed under another key (key id {theirs}; this node's is {ours}): every node sharing a store needs the same key (durable.keyEnv)"
    )]
    OtherKey {
        /// The record's key id, hex.
        theirs: String,
        /// This node's key id, hex.
        ours: String,
    },
    /// A payload longer than the cipher takes (256 GiB).
    #[error("the payload ({len} bytes) is too long to seal")]
    TooLong {
        /// Its length.
        len: usize,
    },
    /// The operating system's random generator failed (no nonce, so nothing was sealed).
    #[error("no random nonce: {0}")]
    NoRandomness(String),
    /// The tag does not verify.
    #[error(
        "it failed authentication: it was altered or truncated, or it belongs under another key name"
    )]
    Authentication,
}

/// Seals and opens records under one [`StateKey`].
#[derive(Clone)]
pub struct Seal {
    cipher: XChaCha20Poly1305,
    key_id: [u8; KEY_ID_LEN],
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Seal(key id {})", self.key_id())
    }
}

impl Seal {
    /// A seal with `key`.
    pub fn new(key: &StateKey) -> Self {
        let digest = Sha256::new()
            .chain_update(b"codemode state key id")
            .chain_update(key.bytes())
            .finalize();
        let mut key_id = [0u8; KEY_ID_LEN];
        key_id.copy_from_slice(&digest[..KEY_ID_LEN]);
        Seal {
            cipher: XChaCha20Poly1305::new(&Key::from(*key.bytes())),
            key_id,
        }
    }

    /// The key's id, hex (safe to show: derived one-way).
    pub fn key_id(&self) -> String {
        hex(&self.key_id)
    }

    /// `payload` sealed for the key name `name`, with its `deadline` (Unix milliseconds).
    ///
    /// # Errors
    ///
    /// [`SealError::NoRandomness`] when the operating system's generator fails.
    pub fn seal(&self, name: &str, deadline_ms: u64, payload: &[u8]) -> Result<Vec<u8>, SealError> {
        let mut out = Vec::with_capacity(SEAL_OVERHEAD + payload.len());
        out.push(VERSION);
        out.extend_from_slice(&self.key_id);
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|e| SealError::NoRandomness(e.to_string()))?;
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&deadline_ms.to_le_bytes());
        out.extend_from_slice(payload);
        let aad = associated_data(&out[..HEADER_LEN], name);
        let tag = self
            .cipher
            .encrypt_inout_detached(
                &XNonce::from(nonce),
                &aad,
                InOutBuf::from(&mut out[BODY_START..]),
            )
            .map_err(|_| SealError::TooLong { len: payload.len() })?;
        out.extend_from_slice(&tag);
        Ok(out)
    }

    /// Opens a record sealed for the key name `name`: its deadline (Unix milliseconds) and
    /// payload.
    ///
    /// # Errors
    ///
    /// [`SealError`]: too short, another version, another key, or failed authentication
    /// (altered, truncated, or sealed for another name).
    pub fn open(&self, name: &str, sealed: &[u8]) -> Result<(u64, Vec<u8>), SealError> {
        if sealed.len() < MIN_SEALED_LEN {
            return Err(SealError::TooShort { len: sealed.len() });
        }
        if sealed[0] != VERSION {
            return Err(SealError::UnknownVersion { version: sealed[0] });
        }
        if sealed[1..HEADER_LEN] != self.key_id {
            return Err(SealError::OtherKey {
                theirs: hex(&sealed[1..HEADER_LEN]),
                ours: self.key_id(),
            });
        }
        let tag_at = sealed.len() - TAG_LEN;
        // The lengths are fixed by the checks above, so these conversions cannot fail.
        let nonce = XNonce::try_from(&sealed[HEADER_LEN..BODY_START])
            .map_err(|_| SealError::Authentication)?;
        let tag = Tag::try_from(&sealed[tag_at..]).map_err(|_| SealError::Authentication)?;
        let mut body = sealed[BODY_START..tag_at].to_vec();
        let aad = associated_data(&sealed[..HEADER_LEN], name);
        self.cipher
            .decrypt_inout_detached(&nonce, &aad, InOutBuf::from(body.as_mut_slice()), &tag)
            .map_err(|_| SealError::Authentication)?;
        let mut deadline = [0u8; 8];
        deadline.copy_from_slice(&body[..8]);
        body.drain(..8);
        Ok((u64::from_le_bytes(deadline), body))
    }
}

fn associated_data(header: &[u8], name: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(AAD_DOMAIN.len() + header.len() + name.len());
    aad.extend_from_slice(AAD_DOMAIN);
    aad.extend_from_slice(header);
    aad.extend_from_slice(name.as_bytes());
    aad
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seal(byte: u8) -> Seal {
        Seal::new(&StateKey::from_bytes([byte; 32]))
    }

    #[test]
    fn round_trip_and_overhead() {
        let s = seal(1);
        for payload in [&b""[..], b"x", &[7u8; 70_000]] {
            let sealed = s.seal("eval:1", 42, payload).unwrap();
            assert_eq!(sealed.len(), payload.len() + SEAL_OVERHEAD);
            assert_eq!(s.open("eval:1", &sealed).unwrap(), (42, payload.to_vec()));
        }
        // Fresh nonces: the same payload seals differently each time.
        assert_ne!(
            s.seal("k", 1, b"same").unwrap(),
            s.seal("k", 1, b"same").unwrap()
        );
        // A store reader sees no plaintext.
        let sealed = s.seal("k", 1, b"the tool result: hunter2").unwrap();
        assert!(!sealed.windows(7).any(|w| w == b"hunter2"));
    }

    #[test]
    fn every_tampering_is_a_clear_error() {
        let s = seal(1);
        let sealed = s.seal("eval:1", 42, b"payload of the saved eval").unwrap();
        // Every single flipped bit anywhere is caught (and never panics).
        for i in 0..sealed.len() {
            for bit in 0..8 {
                let mut bad = sealed.clone();
                bad[i] ^= 1 << bit;
                let e = s.open("eval:1", &bad).unwrap_err();
                let expected = match i {
                    0 => SealError::UnknownVersion {
                        version: VERSION ^ (1 << bit),
                    },
                    1..HEADER_LEN => SealError::OtherKey {
                        theirs: hex(&bad[1..HEADER_LEN]),
                        ours: s.key_id(),
                    },
                    _ => SealError::Authentication,
                };
                assert_eq!(e, expected, "byte {i} bit {bit}");
            }
        }
        // Truncated at every length.
        for len in 0..sealed.len() {
            let e = s.open("eval:1", &sealed[..len]).unwrap_err();
            if len < MIN_SEALED_LEN {
                assert_eq!(e, SealError::TooShort { len });
            } else {
                assert_eq!(e, SealError::Authentication, "length {len}");
            }
        }
        // Moved to another key name.
        assert_eq!(
            s.open("eval:2", &sealed).unwrap_err(),
            SealError::Authentication
        );
        // Opened with another key.
        let other = seal(2);
        let e = other.open("eval:1", &sealed).unwrap_err();
        assert_eq!(
            e,
            SealError::OtherKey {
                theirs: s.key_id(),
                ours: other.key_id()
            }
        );
        assert_eq!(
            e.to_string(),
            format!(
                "it was sealed under another key (key id {}; this node's is {}): every node \
                 sharing a store needs the same key (durable.keyEnv)",
                s.key_id(),
                other.key_id()
            )
        );
        // Another key that claims this node's key id still fails.
        let mut forged = other.seal("eval:1", 42, b"forged").unwrap();
        forged[1..HEADER_LEN].copy_from_slice(&sealed[1..HEADER_LEN]);
        assert_eq!(
            s.open("eval:1", &forged).unwrap_err(),
            SealError::Authentication
        );
        assert_eq!(
            SealError::TooShort { len: 3 }.to_string(),
            "it is 3 bytes, shorter than any sealed record (57): truncated, or not a codemode record"
        );
    }
}
