//! Who a request comes from, as the deployment decides it: the [`Authenticator`] that verifies
//! an HTTP request's credential, its [`AuthRefusal`], and the [`ProtectedResource`] metadata
//! (RFC 9728) a refused client is pointed at. The HTTP edge that runs them lives in
//! [`crate::transport::auth`]; the server only needs to know whether one is configured.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::engine::Caller;

/// Verifies the credential of every request to the HTTP MCP endpoint.
///
/// Called once per request, before the body is read, with the request's head. `Ok` is the
/// verified [`Caller`] (its id and the claims the credential vouches for), which every engine
/// call of that request receives; `Err` is answered with HTTP 401 (or 400/403, see
/// [`AuthErrorCode`]) and a `WWW-Authenticate: Bearer` challenge, and the request never reaches
/// the server. It must not panic, whatever the request holds.
pub trait Authenticator: Send + Sync + 'static {
    /// The verified caller of the request with head `parts`, or why it is refused.
    fn authenticate(&self, parts: &http::request::Parts) -> Result<Caller, AuthRefusal>;
}

/// The RFC 6750 §3.1 error codes of a refused bearer credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthErrorCode {
    /// The request is malformed (HTTP 400).
    InvalidRequest,
    /// The credential is expired, revoked, malformed or otherwise invalid (HTTP 401).
    InvalidToken,
    /// The credential is valid but does not grant enough (HTTP 403).
    InsufficientScope,
}

impl AuthErrorCode {
    /// The code as written in `WWW-Authenticate` (`invalid_token`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            AuthErrorCode::InvalidRequest => "invalid_request",
            AuthErrorCode::InvalidToken => "invalid_token",
            AuthErrorCode::InsufficientScope => "insufficient_scope",
        }
    }

    /// The HTTP status RFC 6750 §3.1 gives the code.
    pub fn status(self) -> u16 {
        match self {
            AuthErrorCode::InvalidRequest => 400,
            AuthErrorCode::InvalidToken => 401,
            AuthErrorCode::InsufficientScope => 403,
        }
    }
}

/// Why a request's credential was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRefusal {
    /// The error code; `None` when the request carries no credential at all, which RFC 6750
    /// §3.1 answers with a bare challenge (no `error` attribute).
    pub code: Option<AuthErrorCode>,
    /// What is wrong, for the client's developer (`error_description`).
    pub description: String,
}

impl AuthRefusal {
    /// The request carries no credential (HTTP 401, no `error` attribute).
    pub fn missing() -> Self {
        AuthRefusal { code: None, description: "this endpoint needs a bearer token".to_owned() }
    }

    /// The credential is invalid: malformed, badly signed, expired, for another audience...
    pub fn invalid_token(description: impl Into<String>) -> Self {
        AuthRefusal { code: Some(AuthErrorCode::InvalidToken), description: description.into() }
    }

    /// The request is malformed (two credentials, an unreadable header...).
    pub fn invalid_request(description: impl Into<String>) -> Self {
        AuthRefusal { code: Some(AuthErrorCode::InvalidRequest), description: description.into() }
    }

    /// The credential is valid but grants too little.
    pub fn insufficient_scope(description: impl Into<String>) -> Self {
        AuthRefusal { code: Some(AuthErrorCode::InsufficientScope), description: description.into() }
    }

    /// The HTTP status of the refusal: 401 without a code, else the code's.
    pub fn status(&self) -> u16 {
        self.code.map_or(401, AuthErrorCode::status)
    }
}

/// The OAuth 2.0 Protected Resource Metadata (RFC 9728) of this MCP server: its resource
/// identifier and the authorization servers that issue tokens for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedResource {
    /// The resource identifier: the MCP endpoint's URL (`https://mcp.example.com/mcp`).
    pub resource: String,
    /// Issuer URLs of the authorization servers that issue tokens for this resource.
    pub authorization_servers: Vec<String>,
    /// The scopes a client may request (`scopes_supported`); omitted from the document when
    /// empty.
    pub scopes_supported: Vec<String>,
}

impl ProtectedResource {
    /// The metadata of resource `resource` (the MCP endpoint's URL), with no authorization
    /// servers or scopes yet.
    pub fn new(resource: impl Into<String>) -> Self {
        ProtectedResource {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
        }
    }

    /// Add an authorization server (its issuer URL).
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// Add a supported scope.
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes_supported.push(scope.into());
        self
    }

    /// Where the document is served (RFC 9728 §3.1): `/.well-known/oauth-protected-resource`
    /// inserted between the resource's origin and its path, so `https://h/mcp` has
    /// `https://h/.well-known/oauth-protected-resource/mcp`.
    pub fn metadata_url(&self) -> String {
        let resource = self.resource.split(['?', '#']).next().unwrap_or_default();
        let after_scheme = resource.find("://").map_or(0, |i| i + 3);
        let (origin, path) = match resource[after_scheme..].find('/') {
            Some(i) => resource.split_at(after_scheme + i),
            None => (resource, ""),
        };
        format!("{origin}/.well-known/oauth-protected-resource{}", path.trim_end_matches('/'))
    }

    /// The metadata document.
    pub fn document(&self) -> Value {
        let mut document = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            document["scopes_supported"] = json!(self.scopes_supported);
        }
        document
    }
}

/// How the server tells callers apart, as the builder configured it.
#[derive(Clone, Default)]
pub(crate) struct Identity {
    /// Verifies every HTTP request (set: every HTTP caller is verified).
    pub authenticator: Option<Arc<dyn Authenticator>>,
    /// The metadata served and named in challenges.
    pub resource: Option<ProtectedResource>,
    /// Every sessionless request is the one shared anonymous caller.
    pub anonymous_sessionless: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_inserts_the_well_known_path_before_the_resource_path() {
        let url = |r: &str| ProtectedResource::new(r).metadata_url();
        assert_eq!(
            url("https://h.example/mcp"),
            "https://h.example/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(url("https://h.example/"), "https://h.example/.well-known/oauth-protected-resource");
        assert_eq!(url("https://h.example"), "https://h.example/.well-known/oauth-protected-resource");
        assert_eq!(
            url("http://127.0.0.1:8/a/b/?q"),
            "http://127.0.0.1:8/.well-known/oauth-protected-resource/a/b"
        );
    }
}
