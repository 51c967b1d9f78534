//! [`JwtAuthenticator`]: verified callers from bearer JSON Web Tokens (feature `jwt`).
//!
//! A request's `Authorization: Bearer <jwt>` is verified against a shared secret (HS256, HS384,
//! HS512) or a JWKS file (RSA and EC public keys, RS256/ES256 and their family, chosen by the
//! token's `kid`); its `exp` (required) and `nbf` are checked with a leeway of 30 s, its `iss`
//! and `aud` when configured. The caller's id is the `sub` claim (or the claim named by
//! [`JwtAuthenticator::subject_claim`]) and its claims are the token's. Every failure is an
//! `invalid_token` refusal saying what was wrong; a request without a bearer credential gets
//! the bare challenge.

use std::path::Path;

use axum::http::{header, request::Parts};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::auth::{AuthRefusal, Authenticator};
use crate::engine::Caller;

/// Clock skew tolerated on `exp` and `nbf`, in seconds.
const LEEWAY_SECS: u64 = 30;

/// Verifies bearer JWTs; see the [module docs](self).
pub struct JwtAuthenticator {
    keys: Keys,
    issuer: Option<String>,
    audience: Option<String>,
    subject_claim: String,
    leeway: u64,
}

/// Where the verifying keys come from.
enum Keys {
    /// One shared secret (HMAC).
    Secret(DecodingKey),
    /// Public keys by `kid`, each with the algorithms of its family.
    Set(Vec<(Option<String>, DecodingKey)>),
}

/// Why a [`JwtAuthenticator`] could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtKeyError(pub String);

impl std::fmt::Display for JwtKeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for JwtKeyError {}

impl JwtAuthenticator {
    /// Verify HS256/HS384/HS512 tokens signed with `secret` (at least 32 bytes).
    pub fn from_secret(secret: &[u8]) -> Result<Self, JwtKeyError> {
        if secret.len() < 32 {
            return Err(JwtKeyError(format!(
                "the JWT secret is {} bytes; use at least 32 random bytes",
                secret.len()
            )));
        }
        let key =
            DecodingKey::from_secret(secret).map_err(|e| JwtKeyError(format!("the JWT secret: {e}")))?;
        Self::with_keys(Keys::Secret(key))
    }

    /// [`from_secret`](Self::from_secret) with the contents of the file at `path` (trailing
    /// whitespace, such as the final newline, is not part of the secret).
    pub fn from_secret_file(path: impl AsRef<Path>) -> Result<Self, JwtKeyError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path)
            .map_err(|e| JwtKeyError(format!("reading the JWT secret file {}: {e}", path.display())))?;
        let end = bytes.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(0, |i| i + 1);
        Self::from_secret(&bytes[..end])
    }

    /// Verify tokens signed by any key of the JWK Set `jwks` (a JSON `{"keys": [...]}`); a
    /// token names its key by `kid` (it may omit it when the set holds one key).
    pub fn from_jwks(jwks: &str) -> Result<Self, JwtKeyError> {
        let set: JwkSet = serde_json::from_str(jwks).map_err(|e| JwtKeyError(format!("the JWKS: {e}")))?;
        let mut keys = Vec::new();
        for jwk in &set.keys {
            let key = DecodingKey::from_jwk(jwk).map_err(|e| {
                JwtKeyError(format!(
                    "the JWKS key {}: {e}",
                    jwk.common.key_id.as_deref().unwrap_or("without kid")
                ))
            })?;
            keys.push((jwk.common.key_id.clone(), key));
        }
        if keys.is_empty() {
            return Err(JwtKeyError("the JWKS holds no key".to_owned()));
        }
        Self::with_keys(Keys::Set(keys))
    }

    /// [`from_jwks`](Self::from_jwks) with the contents of the file at `path`.
    pub fn from_jwks_file(path: impl AsRef<Path>) -> Result<Self, JwtKeyError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| JwtKeyError(format!("reading the JWKS file {}: {e}", path.display())))?;
        Self::from_jwks(&text)
    }

    fn with_keys(keys: Keys) -> Result<Self, JwtKeyError> {
        if jsonwebtoken::crypto::CryptoProvider::try_get_default().is_none() {
            return Err(JwtKeyError("jsonwebtoken has no crypto provider in this build".to_owned()));
        }
        Ok(JwtAuthenticator {
            keys,
            issuer: None,
            audience: None,
            subject_claim: "sub".to_owned(),
            leeway: LEEWAY_SECS,
        })
    }

    /// Require the `iss` claim to be `issuer`.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Require the `aud` claim to name `audience`. Without it, a token naming any audience is
    /// refused (it was meant for someone).
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self
    }

    /// Take the caller's id from the string claim `name` instead of `sub`.
    pub fn subject_claim(mut self, name: impl Into<String>) -> Self {
        self.subject_claim = name.into();
        self
    }

    /// The clock skew tolerated on `exp` and `nbf`; default 30 s.
    pub fn leeway(mut self, leeway: std::time::Duration) -> Self {
        self.leeway = leeway.as_secs();
        self
    }

    /// The checks for a key of `family`'s algorithms.
    fn validation(&self, algorithms: &[Algorithm]) -> Validation {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.algorithms = algorithms.to_vec();
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        let mut required = vec!["exp"];
        if let Some(issuer) = &self.issuer {
            validation.set_issuer(&[issuer]);
            required.push("iss");
        }
        if let Some(audience) = &self.audience {
            validation.set_audience(&[audience]);
            required.push("aud");
        }
        validation.set_required_spec_claims(&required);
        validation
    }

    /// The key that verifies `token`, or why none does.
    fn key(&self, token: &str) -> Result<&DecodingKey, AuthRefusal> {
        let keys = match &self.keys {
            Keys::Secret(key) => return Ok(key),
            Keys::Set(keys) => keys,
        };
        let header = jsonwebtoken::decode_header(token).map_err(|_| malformed())?;
        match (&header.kid, keys.as_slice()) {
            (None, [(_, only)]) => Ok(only),
            (None, _) => Err(AuthRefusal::invalid_token("the token has no kid naming its key")),
            (Some(kid), _) => keys
                .iter()
                .find(|(id, _)| id.as_deref() == Some(kid.as_str()))
                .map(|(_, key)| key)
                .ok_or_else(|| {
                    AuthRefusal::invalid_token(format!("no key has the token's kid {}", cut(kid)))
                }),
        }
    }

    /// Verify `token` and make its caller.
    pub fn verify(&self, token: &str) -> Result<Caller, AuthRefusal> {
        let key = self.key(token)?;
        let validation = self.validation(key.family().algorithms());
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation)
            .map_err(|e| self.refusal(e.kind()))?;
        let claims = data.claims;
        match claims.get(&self.subject_claim) {
            Some(Value::String(id)) if !id.is_empty() => Ok(Caller::with_claims(id.as_str(), claims.clone())),
            _ => Err(AuthRefusal::invalid_token(format!(
                "the token has no {} claim naming its caller",
                self.subject_claim
            ))),
        }
    }

    /// The refusal of a token the library rejected.
    fn refusal(&self, kind: &ErrorKind) -> AuthRefusal {
        let description = match kind {
            ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
            ErrorKind::ExpiredSignature => "the token has expired".to_owned(),
            ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
            ErrorKind::InvalidIssuer => {
                format!("the token's issuer is not {}", self.issuer.as_deref().unwrap_or_default())
            }
            ErrorKind::InvalidAudience => match &self.audience {
                Some(audience) => format!("the token's audience does not include {audience}"),
                None => "the token names an audience, and this server accepts none".to_owned(),
            },
            ErrorKind::MissingRequiredClaim(claim) => format!("the token has no {claim} claim"),
            ErrorKind::InvalidClaimFormat(claim) => format!("the token's {claim} claim is malformed"),
            ErrorKind::InvalidAlgorithm => "the token's algorithm does not match its key".to_owned(),
            ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Json(_) | ErrorKind::Utf8(_) => {
                return malformed()
            }
            other => format!("the token cannot be verified: {other:?}"),
        };
        AuthRefusal::invalid_token(description)
    }
}

fn malformed() -> AuthRefusal {
    AuthRefusal::invalid_token("the token is not a well-formed JWT")
}

impl Authenticator for JwtAuthenticator {
    fn authenticate(&self, parts: &Parts) -> Result<Caller, AuthRefusal> {
        let mut values = parts.headers.get_all(header::AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return match parts.headers.contains_key(header::AUTHORIZATION) {
                true => Err(AuthRefusal::invalid_request("the request has several Authorization headers")),
                false => Err(AuthRefusal::missing()),
            };
        };
        let value = value.to_str().map_err(|_| malformed())?;
        let Some((scheme, token)) = value.trim().split_once(' ') else {
            return Err(AuthRefusal::missing());
        };
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthRefusal::missing());
        }
        self.verify(token.trim())
    }
}

/// How much of a token's `kid` a refusal names, in characters.
const SHOWN_KID: usize = 64;

/// `kid` cut to [`SHOWN_KID`] characters (a token's header is the caller's to fill).
fn cut(kid: &str) -> String {
    let mut shown: String = kid.chars().take(SHOWN_KID).collect();
    if shown.len() < kid.len() {
        shown.push_str("...");
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn token(claims: &Value, alg: Algorithm, secret: &[u8]) -> String {
        let key = jsonwebtoken::EncodingKey::from_secret(secret).unwrap();
        jsonwebtoken::encode(&jsonwebtoken::Header::new(alg), claims, &key).unwrap()
    }

    fn exp() -> u64 {
        jsonwebtoken::get_current_timestamp() + 600
    }

    #[test]
    fn garbage_is_an_invalid_token_and_never_a_panic() {
        let jwt = JwtAuthenticator::from_secret(SECRET).unwrap();
        let none = format!("eyJhbGciOiJub25lIn0.{}.", "eyJzdWIiOiJ4In0");
        let long = "a.".repeat(10_000);
        for garbage in
            ["", ".", "..", "a.b.c", "a.b", "....", "\u{0}.\u{0}.\u{0}", &none, &long, "e30.e30.e30"]
        {
            let refused = jwt.verify(garbage).expect_err(garbage);
            assert_eq!(
                refused.code,
                Some(crate::server::identity::AuthErrorCode::InvalidToken),
                "{garbage:?}"
            );
        }
    }

    #[test]
    fn every_hmac_size_verifies_and_the_subject_claim_is_configurable() {
        let jwt = JwtAuthenticator::from_secret(SECRET).unwrap().subject_claim("email");
        for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
            let claims = serde_json::json!({"email": "a@b.c", "exp": exp(), "role": "admin"});
            let caller = jwt.verify(&token(&claims, alg, SECRET)).unwrap();
            assert_eq!(&*caller.id, "a@b.c");
            assert_eq!(caller.claim("role"), Some(&Value::from("admin")));
        }
        let no_exp = token(&serde_json::json!({"email": "a@b.c"}), Algorithm::HS256, SECRET);
        assert_eq!(jwt.verify(&no_exp).unwrap_err().description, "the token has no exp claim");
        let a_token_for_someone =
            token(&serde_json::json!({"email": "a", "exp": exp(), "aud": "x"}), Algorithm::HS256, SECRET);
        assert_eq!(
            jwt.verify(&a_token_for_someone).unwrap_err().description,
            "the token names an audience, and this server accepts none"
        );
    }

    #[test]
    fn short_secrets_and_empty_key_sets_are_refused() {
        assert!(JwtAuthenticator::from_secret(b"short").is_err());
        assert_eq!(JwtAuthenticator::from_jwks(r#"{"keys": []}"#).err().unwrap().0, "the JWKS holds no key");
        assert!(JwtAuthenticator::from_jwks("not json").is_err());
    }

    /// A P-256 test key pair: the private key (PKCS#8 DER, hex) and its public JWK.
    const EC_PRIVATE: &str = "308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b020101042041b0783c6b9efca1c4432f91d287e5225b2ef2a97c55f8daaf165ff040a53978a14403420004d3403cec3c842986d02b3186ffd5355bfaba7b5d4993fff8a3c89c10288dd37214459505b44db7a3acfe103b5f5fff2b860343a4ca4439b26b53f56582e8554d";
    const JWKS: &str = r#"{"keys": [
        {"kty": "EC", "crv": "P-256", "kid": "ec-1", "alg": "ES256",
         "x": "00A87DyEKYbQKzGG_9U1W_q6e11Jk__4o8icECiN03I", "y": "FEWVBbRNt6Os_hA7X1__K4YDQ6TKRDmya1P1ZYLoVU0"},
        {"kty": "oct", "kid": "hs-1", "k": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY"}
    ]}"#;

    fn es256(claims: &Value, kid: Option<&str>) -> String {
        let der: Vec<u8> = (0..EC_PRIVATE.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&EC_PRIVATE[i..i + 2], 16).unwrap())
            .collect();
        let mut header = jsonwebtoken::Header::new(Algorithm::ES256);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &jsonwebtoken::EncodingKey::from_ec_der(&der)).unwrap()
    }

    #[test]
    fn jwks_keys_are_chosen_by_kid() {
        let jwt = JwtAuthenticator::from_jwks(JWKS).unwrap().issuer("https://iss");
        let claims = serde_json::json!({"sub": "ec-user", "iss": "https://iss", "exp": exp()});
        assert_eq!(&*jwt.verify(&es256(&claims, Some("ec-1"))).unwrap().id, "ec-user");
        let refused = |t: &str| jwt.verify(t).unwrap_err().description;
        assert_eq!(refused(&es256(&claims, Some("nope"))), "no key has the token's kid nope");
        assert_eq!(refused(&es256(&claims, None)), "the token has no kid naming its key");
        // A token signed with the EC key but naming the HMAC key does not verify.
        assert_eq!(refused(&es256(&claims, Some("hs-1"))), "the token's algorithm does not match its key");
        let wrong_issuer = serde_json::json!({"sub": "x", "iss": "https://other", "exp": exp()});
        assert_eq!(refused(&es256(&wrong_issuer, Some("ec-1"))), "the token's issuer is not https://iss");
    }
}
