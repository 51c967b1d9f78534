//! Verified callers for tests: HS256 JWTs minted here and the [`JwtAuthenticator`] that
//! verifies them, plus a raw POST that returns the status and headers a refusal carries.

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use pilotage::transport::jwt::JwtAuthenticator;
use serde_json::{json, Value};

/// The shared secret of the test tokens (32 bytes or more).
pub const SECRET: &str = "pilotage-test-secret-0123456789abcdef";
/// The issuer the test authenticator requires.
pub const ISSUER: &str = "https://issuer.test";
/// The audience the test authenticator requires.
pub const AUDIENCE: &str = "pilotage-tests";

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs()
}

/// The authenticator of [`SECRET`], [`ISSUER`] and [`AUDIENCE`].
pub fn authenticator() -> JwtAuthenticator {
    JwtAuthenticator::from_secret(SECRET.as_bytes())
        .expect("a valid secret")
        .issuer(ISSUER)
        .audience(AUDIENCE)
}

/// An HS256 token of `claims` signed with `secret`.
pub fn sign(claims: &Value, secret: &str) -> String {
    encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret.as_bytes()).expect("an HMAC key"),
    )
    .expect("a signed token")
}

/// The claims of a valid token for `sub`, valid for an hour, with `extra` merged in.
pub fn claims(sub: &str, extra: Value) -> Value {
    let mut claims = json!({"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "iat": now(), "exp": now() + 3600});
    if let (Some(c), Value::Object(extra)) = (claims.as_object_mut(), extra) {
        c.extend(extra);
    }
    claims
}

/// A valid token for `sub`.
pub fn token(sub: &str) -> String {
    sign(&claims(sub, json!({})), SECRET)
}

/// The `Authorization` value of a valid token for `sub`.
pub fn bearer(sub: &str) -> String {
    format!("Bearer {}", token(sub))
}

/// What a raw POST got back.
pub struct Answer {
    pub status: u16,
    pub www_authenticate: Option<String>,
    pub session: Option<String>,
    pub body: Value,
}

/// POST `body` to `url` as a plain-JSON client with `headers`; bounded by [`super::TIMEOUT`].
pub async fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> Answer {
    let client = reqwest::Client::builder().no_proxy().build().expect("an HTTP client");
    let mut request = client.post(url).header("content-type", "application/json").body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response =
        tokio::time::timeout(super::TIMEOUT, request.send()).await.expect("an answer in time").expect("POST");
    let header = |name: &str| response.headers().get(name).map(|v| v.to_str().expect("ASCII").to_owned());
    let (status, www_authenticate, session) =
        (response.status().as_u16(), header("www-authenticate"), header("mcp-session-id"));
    let text = response.text().await.expect("the body");
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Answer { status, www_authenticate, session, body }
}
