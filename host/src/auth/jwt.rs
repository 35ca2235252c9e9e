//! JWT callers (`server.auth.jwt`): signature, algorithm, expiry, not-before, issuer and audience
//! checked, and a token naming critical header extensions (`crit`, RFC 7515 §4.1.11) refused, as
//! none is understood; the caller is the `sub` claim, its permissions the `permissionsClaim`
//! claim.

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use codemode_config::{JwtKeySource, JwtSettings};
use codemode_policies::Caller;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use super::authenticate::{AuthError, AuthSetupError, Authenticate, Credential, bearer};

/// Seconds of clock skew tolerated on `exp` and `nbf`.
pub(crate) const LEEWAY_SECONDS: u64 = 30;

/// Callers identified by JWTs.
pub struct JwtAuth {
    issuer: String,
    audience: String,
    permissions_claim: String,
    keys: Keys,
}

enum Keys {
    /// One shared HS256 secret.
    Hs256(DecodingKey),
    /// Keys of a JWKS file.
    Jwks(KeyMap),
}

/// The keys of a JWKS by `kid` (`None`: a key without one), each with the algorithm it names.
pub(super) type KeyMap = BTreeMap<Option<String>, (DecodingKey, Option<Algorithm>)>;

/// The usable keys of `set`.
///
/// # Errors
/// What is wrong with a key (naming its `kid`), or that there are none.
pub(super) fn key_map(set: &JwkSet) -> Result<KeyMap, String> {
    let mut keys = BTreeMap::new();
    for jwk in &set.keys {
        let key = DecodingKey::from_jwk(jwk).map_err(|e| {
            format!(
                "key {}: {e}",
                jwk.common.key_id.as_deref().unwrap_or("(no kid)")
            )
        })?;
        let alg = jwk
            .common
            .key_algorithm
            .and_then(|a| a.to_string().parse::<Algorithm>().ok());
        keys.insert(jwk.common.key_id.clone(), (key, alg));
    }
    if keys.is_empty() {
        return Err("no keys".into());
    }
    Ok(keys)
}

/// The key of `keys` a token with `header` names, and the algorithm to verify it with.
///
/// # Errors
/// An unknown `kid`; an HMAC algorithm (a JWKS holds public keys: HMAC would use the public
/// key as a shared secret) or one other than the key names.
pub(super) fn select<'k>(
    keys: &'k KeyMap,
    header: &jsonwebtoken::Header,
) -> Result<(&'k DecodingKey, Algorithm), AuthError> {
    let (key, pinned) = keys
        .get(&header.kid)
        // A token without `kid` may use the set's only key.
        .or_else(|| {
            (header.kid.is_none() && keys.len() == 1)
                .then(|| keys.values().next())
                .flatten()
        })
        .ok_or_else(|| AuthError::Invalid("unknown key id".into()))?;
    if matches!(
        header.alg,
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
    ) || pinned.is_some_and(|a| a != header.alg)
    {
        return Err(AuthError::Invalid("algorithm not allowed".into()));
    }
    Ok((key, header.alg))
}

/// Refuses a token naming critical header extensions: every extension `crit` names must be
/// understood, and this verifier understands none (an empty list is malformed: RFC 7515
/// §4.1.11).
pub(super) fn refuse_crit(header: &jsonwebtoken::Header) -> Result<(), AuthError> {
    match header.crit.as_deref() {
        None => Ok(()),
        Some([]) => Err(AuthError::Invalid("an empty `crit` header".into())),
        Some([name, ..]) => Err(AuthError::Invalid(format!(
            "critical header extension `{}` not supported",
            codemode_policies::neutralize(name)
        ))),
    }
}

/// The validation of every JWT mode: `alg`, `exp` and `nbf` (with [`LEEWAY_SECONDS`]), `iss`,
/// `aud`; `exp`, `iss`, `aud` and `sub` required.
pub(super) fn validation(alg: Algorithm, issuer: &str, audience: &str) -> Validation {
    let mut v = Validation::new(alg);
    v.leeway = LEEWAY_SECONDS;
    // `nbf` when present (optional, like in RFC 7519), with the same leeway as `exp`.
    v.validate_nbf = true;
    v.set_issuer(&[issuer]);
    v.set_audience(&[audience]);
    v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    v
}

/// The verified claims of `token`.
///
/// # Errors
/// Why the token is refused.
pub(super) fn decode(
    token: &str,
    key: &DecodingKey,
    validation: &Validation,
) -> Result<BTreeMap<String, Value>, AuthError> {
    jsonwebtoken::decode::<BTreeMap<String, Value>>(token, key, validation)
        .map(|data| data.claims)
        .map_err(invalid)
}

/// The longest `sub` (the caller's name) accepted: the name is shown in every approval prompt
/// and written in every audit record.
pub(super) const MAX_SUB_CHARS: usize = 256;

/// The credential of verified `claims` granting `permissions`: the caller is `sub`, accepted
/// until `exp` plus the leeway.
///
/// # Errors
/// A `sub` that is not a non-empty string of at most [`MAX_SUB_CHARS`] characters.
pub(super) fn credential(
    claims: &BTreeMap<String, Value>,
    permissions: Vec<String>,
) -> Result<Credential, AuthError> {
    let sub = match claims.get("sub") {
        Some(Value::String(s)) if s.chars().count() > MAX_SUB_CHARS => {
            return Err(AuthError::Invalid(format!(
                "`sub` is longer than {MAX_SUB_CHARS} characters"
            )));
        }
        // The local user's name would give the caller what is bound to that name (its
        // remembered approvals, its asks): an authenticated caller never takes it.
        Some(Value::String(s)) if s == Caller::LOCAL => {
            return Err(AuthError::Invalid(format!(
                "`sub` `{}` is the name of the unauthenticated local user",
                Caller::LOCAL
            )));
        }
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => {
            return Err(AuthError::Invalid(
                "`sub` must be a non-empty string".into(),
            ));
        }
    };
    // `exp` is required and was checked: accepted until `exp` plus the leeway, as `decode`
    // judges it.
    let expires_at = claims
        .get("exp")
        .and_then(|exp| {
            exp.as_u64()
                .or_else(|| exp.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
        })
        // Past what `SystemTime` holds (a signed `exp` of 10^19): as good as never.
        .and_then(|exp| {
            UNIX_EPOCH.checked_add(Duration::from_secs(exp.saturating_add(LEEWAY_SECONDS)))
        });
    Ok(Credential {
        caller: Caller::new(sub, permissions),
        expires_at,
    })
}

impl std::fmt::Debug for JwtAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtAuth")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl JwtAuth {
    /// Reads the key (the secret's variable, or the JWKS file) now.
    ///
    /// # Errors
    /// [`AuthSetupError`] naming the config path: an unset variable, an unreadable or invalid
    /// JWKS file.
    pub fn new(
        settings: &JwtSettings,
        getenv: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, AuthSetupError> {
        codemode_upstream::crypto::install();
        let keys = match &settings.key {
            JwtKeySource::Hs256SecretEnv(var) => match getenv(var).filter(|v| !v.is_empty()) {
                Some(secret) => Keys::Hs256(DecodingKey::from_secret(secret.as_bytes())),
                None => {
                    return Err(AuthSetupError::MissingEnv {
                        path: "server.auth.jwt.hs256SecretEnv".into(),
                        var: var.clone(),
                    });
                }
            },
            JwtKeySource::JwksFile(path) => {
                let bad = |message: String| AuthSetupError::Jwks {
                    file: path.display().to_string(),
                    message,
                };
                let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
                let set: JwkSet = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
                let keys = key_map(&set).map_err(bad)?;
                Keys::Jwks(keys)
            }
        };
        Ok(JwtAuth {
            issuer: settings.issuer.clone(),
            audience: settings.audience.clone(),
            permissions_claim: settings.permissions_claim.clone(),
            keys,
        })
    }
}

pub(super) fn invalid(e: jsonwebtoken::errors::Error) -> AuthError {
    use jsonwebtoken::errors::ErrorKind;
    AuthError::Invalid(match e.kind() {
        ErrorKind::ExpiredSignature => "the token has expired".to_string(),
        ErrorKind::InvalidIssuer => "wrong issuer".to_string(),
        ErrorKind::InvalidAudience => "wrong audience".to_string(),
        ErrorKind::InvalidSignature => "bad signature".to_string(),
        ErrorKind::InvalidAlgorithm => "algorithm not allowed".to_string(),
        ErrorKind::ImmatureSignature => "the token is not valid yet".to_string(),
        ErrorKind::MissingRequiredClaim(c) => format!("missing claim `{c}`"),
        _ => format!("malformed token ({e})"),
    })
}

impl Authenticate for JwtAuth {
    fn authenticate(&self, headers: &http::HeaderMap) -> Result<Caller, AuthError> {
        self.credential(headers).map(|c| c.caller)
    }

    fn credential(&self, headers: &http::HeaderMap) -> Result<Credential, AuthError> {
        let token = bearer(headers)?;
        let header = jsonwebtoken::decode_header(token).map_err(invalid)?;
        refuse_crit(&header)?;
        let (key, alg) = match &self.keys {
            Keys::Hs256(key) => (key, Algorithm::HS256),
            Keys::Jwks(keys) => select(keys, &header)?,
        };
        let claims = decode(token, key, &validation(alg, &self.issuer, &self.audience))?;
        let permissions: Vec<String> = match claims.get(&self.permissions_claim) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    AuthError::Invalid(format!(
                        "`{}` must be an array of strings",
                        self.permissions_claim
                    ))
                })?,
            Some(_) => {
                return Err(AuthError::Invalid(format!(
                    "`{}` must be an array of strings",
                    self.permissions_claim
                )));
            }
        };
        credential(&claims, permissions)
    }

    fn enabled(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::jwk::Jwk;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    /// A P-256 key made for this test only (`openssl ecparam -genkey -name prime256v1`).
    const EC_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgIfhlt+pHD+Ic/7iG
VLhKl9OhiXLKWltVusPuGq2mBnehRANCAASdrQHwi7d+OPYhhmOpCtPbmzngLKvM
uxvejBLl3yh5EKEdx2t9epFdmfH7lkN68D8VIUMbZw00Nz1wSIqKeUP9
-----END PRIVATE KEY-----
";

    fn bearer_headers(token: &str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        h.insert(
            http::header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        h
    }

    fn now() -> u64 {
        jsonwebtoken::get_current_timestamp()
    }

    #[test]
    fn a_jwt_credential_expires_at_its_exp_plus_the_leeway() {
        let jwt = super::super::jwt_settings(json!({"hs256SecretEnv": "S"}));
        let auth = JwtAuth::new(&jwt, &|_| Some("secret".into())).unwrap();
        let token = |exp: u64| {
            let claims = json!({"sub": "bob", "iss": "iss", "aud": "aud", "exp": exp});
            let key = EncodingKey::from_secret(b"secret");
            jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap()
        };
        let exp = now() + 600;
        let credential = auth.credential(&bearer_headers(&token(exp))).unwrap();
        assert_eq!(credential.caller, Caller::new("bob", Vec::<String>::new()));
        assert_eq!(
            credential.expires_at,
            Some(UNIX_EPOCH + Duration::from_secs(exp + LEEWAY_SECONDS))
        );
        // An `exp` past what a time can hold is accepted, as never expiring (no overflow).
        let far = auth.credential(&bearer_headers(&token(u64::MAX))).unwrap();
        assert_eq!(far.expires_at, None);
    }

    #[test]
    fn a_jwks_file_verifies_es256_and_refuses_hmac_with_its_key() {
        let key = EncodingKey::from_ec_pem(EC_KEY.as_bytes()).unwrap();
        let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap();
        jwk.common.key_id = Some("k1".into());
        let dir = std::env::temp_dir().join(format!("codemode-jwks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("jwks.json");
        std::fs::write(&file, json!({"keys": [jwk]}).to_string()).unwrap();
        let jwt =
            super::super::jwt_settings(json!({"jwksFile": file, "permissionsClaim": "scope"}));
        let auth = JwtAuth::new(&jwt, &|_| None).unwrap();
        let claims = json!({"sub": "bob", "iss": "iss", "aud": "aud", "exp": now() + 600,
            "scope": "approve payments"});
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some("k1".into());
        let token = jsonwebtoken::encode(&header, &claims, &key).unwrap();
        assert_eq!(
            auth.authenticate(&bearer_headers(&token)).unwrap(),
            Caller::new("bob", ["approve", "payments"])
        );
        // An unknown kid, and HMAC keyed with the public key's bytes, are refused.
        header.kid = Some("k2".into());
        let token = jsonwebtoken::encode(&header, &claims, &key).unwrap();
        assert_eq!(
            auth.authenticate(&bearer_headers(&token)),
            Err(AuthError::Invalid("unknown key id".into()))
        );
        let mut hmac = Header::new(Algorithm::HS256);
        hmac.kid = Some("k1".into());
        let forged =
            jsonwebtoken::encode(&hmac, &claims, &EncodingKey::from_secret(b"public")).unwrap();
        assert_eq!(
            auth.authenticate(&bearer_headers(&forged)),
            Err(AuthError::Invalid("algorithm not allowed".into()))
        );
        // A missing `sub` is refused.
        let no_sub = json!({"iss": "iss", "aud": "aud", "exp": now() + 600});
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some("k1".into());
        let token = jsonwebtoken::encode(&header, &no_sub, &key).unwrap();
        assert_eq!(
            auth.authenticate(&bearer_headers(&token)),
            Err(AuthError::Invalid("missing claim `sub`".into()))
        );
        let _ = std::fs::remove_dir_all(&dir);
        // An unreadable file refuses to start, naming the config path.
        let mut bad = jwt;
        bad.key = JwtKeySource::JwksFile("/nonexistent/jwks.json".into());
        let err = JwtAuth::new(&bad, &|_| None).unwrap_err().to_string();
        assert!(
            err.starts_with("server.auth.jwt.jwksFile: /nonexistent/jwks.json: "),
            "{err}"
        );
    }

    fn hs256() -> (JwtAuth, EncodingKey) {
        let config = codemode_policies::Config::from_json_str(
            &json!({"server": {"auth": {"jwt": {"issuer": "iss", "audience": "aud",
                "hs256SecretEnv": "JWT_SECRET"}}}})
            .to_string(),
        )
        .unwrap();
        let Some(codemode_config::AuthSettings::Jwt(jwt)) = config.server.auth else {
            panic!("jwt settings")
        };
        let auth = JwtAuth::new(&jwt, &|_| Some("s3cret".into())).unwrap();
        (auth, EncodingKey::from_secret(b"s3cret"))
    }

    /// A token of [`hs256`]'s issuer and audience for `sub`, valid for ten minutes.
    fn token_for(key: &EncodingKey, sub: &str) -> String {
        let claims = json!({"sub": sub, "iss": "iss", "aud": "aud", "exp": now() + 600});
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, key).unwrap()
    }

    #[test]
    fn not_before_is_checked_with_the_expiry_leeway() {
        let (auth, key) = hs256();
        let token = |nbf: Option<u64>| {
            let mut claims = json!({"sub": "bob", "iss": "iss", "aud": "aud", "exp": now() + 600});
            if let Some(nbf) = nbf {
                claims["nbf"] = json!(nbf);
            }
            jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap()
        };
        let bob = Ok(Caller::new("bob", Vec::<String>::new()));
        // Login without `nbf`, with one in the past, and within the leeway keeps working.
        assert_eq!(auth.authenticate(&bearer_headers(&token(None))), bob);
        assert_eq!(
            auth.authenticate(&bearer_headers(&token(Some(now() - 60)))),
            bob
        );
        assert_eq!(
            auth.authenticate(&bearer_headers(&token(Some(now() + LEEWAY_SECONDS / 2)))),
            bob
        );
        // A token not valid for another ten minutes is refused.
        assert_eq!(
            auth.authenticate(&bearer_headers(&token(Some(now() + 600)))),
            Err(AuthError::Invalid("the token is not valid yet".into()))
        );
    }

    #[test]
    fn a_subject_longer_than_the_bound_is_refused() {
        let (auth, key) = hs256();
        let token = |sub: &str| token_for(&key, sub);
        let longest = "é".repeat(MAX_SUB_CHARS);
        assert_eq!(
            auth.authenticate(&bearer_headers(&token(&longest))),
            Ok(Caller::new(longest.clone(), Vec::<String>::new()))
        );
        assert_eq!(
            auth.authenticate(&bearer_headers(&token(&format!("{longest}x")))),
            Err(AuthError::Invalid(
                "`sub` is longer than 256 characters".into()
            ))
        );
    }

    /// A JWT naming the local user is refused: its caller would get the remembered approvals
    /// `codemode run` and the stdio server recorded for the machine's own user.
    #[test]
    fn a_subject_naming_the_local_user_is_refused() {
        let (auth, key) = hs256();
        let token = |sub: &str| token_for(&key, sub);
        assert_eq!(
            auth.authenticate(&bearer_headers(&token("local"))),
            Err(AuthError::Invalid(
                "`sub` `local` is the name of the unauthenticated local user".into()
            ))
        );
        assert_eq!(
            auth.authenticate(&bearer_headers(&token("Local"))),
            Ok(Caller::new("Local", Vec::<String>::new()))
        );
    }

    #[test]
    fn critical_header_extensions_are_refused() {
        let (auth, key) = hs256();
        let claims = json!({"sub": "bob", "iss": "iss", "aud": "aud", "exp": now() + 600});
        let mut header = Header::new(Algorithm::HS256);
        header.crit = Some(vec!["b64".into()]);
        header.extras.insert("b64", false);
        let token = jsonwebtoken::encode(&header, &claims, &key).unwrap();
        assert_eq!(
            auth.authenticate(&bearer_headers(&token)),
            Err(AuthError::Invalid(
                "critical header extension `b64` not supported".into()
            ))
        );
        header.crit = Some(vec![]);
        let token = jsonwebtoken::encode(&header, &claims, &key).unwrap();
        assert_eq!(
            auth.authenticate(&bearer_headers(&token)),
            Err(AuthError::Invalid("an empty `crit` header".into()))
        );
        // The same token without `crit` logs in.
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap();
        assert_eq!(
            auth.authenticate(&bearer_headers(&token)),
            Ok(Caller::new("bob", Vec::<String>::new()))
        );
    }
}
