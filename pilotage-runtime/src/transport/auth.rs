//! Verified callers on the HTTP edge (the MCP authorization specification, RFC 6750 and
//! RFC 9728).
//!
//! With an [`Authenticator`] in [`HttpOptions`](super::HttpOptions) (which
//! [`Server::router`](crate::Server::router), `serve_http` and `serve_listener` fill from
//! [`ServerBuilder::authenticator`](crate::ServerBuilder::authenticator)), every request to the
//! MCP endpoint is verified before anything else reads it:
//!
//! * a refused request gets HTTP 401 (400 for `invalid_request`, 403 for `insufficient_scope`)
//!   with `WWW-Authenticate: Bearer resource_metadata="<url>", error="invalid_token",
//!   error_description="..."`, or only `Bearer resource_metadata="<url>"` when it carries no
//!   credential at all, and a JSON-RPC error body (`-32001`, id `null`); it makes no session and
//!   no world;
//! * a verified request carries its [`Caller`](crate::engine::Caller) in the HTTP request's extensions, which rmcp hands
//!   the handler (`RequestContext::extensions`, as `http::request::Parts`);
//! * an MCP session belongs to the caller of its `initialize`: a request on it from another
//!   verified caller gets HTTP 403 and a JSON-RPC error, so a session id cannot be borrowed.
//!
//! `serve_http` and `serve_listener` also serve the Protected Resource Metadata document
//! ([`ProtectedResource::document`]) at `/.well-known/oauth-protected-resource` and
//! `/.well-known/oauth-protected-resource/mcp`; a router mounted elsewhere can add
//! [`metadata_router`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{OriginalUri, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::json;

pub use crate::server::identity::{AuthErrorCode, AuthRefusal, Authenticator, ProtectedResource};

const SESSION_HEADER: &str = "mcp-session-id";
/// The path of the metadata document (RFC 9728 §3).
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
/// The JSON-RPC error code of a refused credential or a borrowed session.
const UNAUTHORIZED: i64 = -32001;

/// Which verified caller owns each live MCP session; entries leave with their session.
#[derive(Default)]
pub(crate) struct Owners(Mutex<HashMap<Arc<str>, Arc<str>>>);

impl Owners {
    fn owner(&self, session: &str) -> Option<Arc<str>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).get(session).cloned()
    }

    fn bind(&self, session: &str, caller: Arc<str>) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(session.into(), caller);
    }

    /// Forget a closed session.
    pub(crate) fn forget(&self, session: &str) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(session);
    }
}

/// What the verifying middleware needs.
#[derive(Clone)]
pub(crate) struct Gate {
    pub authenticator: Arc<dyn Authenticator>,
    pub resource: Option<ProtectedResource>,
    pub owners: Arc<Owners>,
}

/// Verify the request (see the module docs), then serve it with its caller in its
/// extensions; bind a session it opens to that caller.
pub(crate) async fn verify(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let caller = match gate.authenticator.authenticate(&parts) {
        Ok(caller) => caller,
        Err(refusal) => return refused(&refusal, &metadata_url(gate.resource.as_ref(), &parts)),
    };
    let session =
        parts.headers.get(SESSION_HEADER).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    if let Some(owner) = session.as_deref().and_then(|s| gate.owners.owner(s)) {
        if owner != caller.id {
            let message = "Forbidden: this MCP session belongs to another caller";
            return rpc_error(StatusCode::FORBIDDEN, message.to_owned());
        }
    }
    let id = caller.id.clone();
    parts.extensions.insert(caller);
    let response = next.run(Request::from_parts(parts, body)).await;
    if session.is_none() {
        if let Some(opened) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
            gate.owners.bind(opened, id);
        }
    }
    response
}

/// How much of a refusal's description a challenge and its body carry, in characters: an
/// authenticator's description may quote what the caller sent.
const MAX_DESCRIPTION: usize = 200;

/// The challenge for a refused credential.
fn refused(refusal: &AuthRefusal, metadata_url: &str) -> Response {
    let mut challenge = format!("Bearer resource_metadata=\"{}\"", quotable(metadata_url));
    let mut description: String = refusal.description.chars().take(MAX_DESCRIPTION).collect();
    if description.len() < refusal.description.len() {
        description.push_str("...");
    }
    if let Some(code) = refusal.code {
        let quoted = quotable(&description);
        challenge.push_str(&format!(", error=\"{}\", error_description=\"{quoted}\"", code.as_str()));
    }
    let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::UNAUTHORIZED);
    let mut response = rpc_error(status, format!("Unauthorized: {description}"));
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// `text` as RFC 6750 allows inside a quoted attribute: printable ASCII without `"` and `\`.
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            ' '..='~' => c,
            _ => '?',
        })
        .collect()
}

fn rpc_error(status: StatusCode, message: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": UNAUTHORIZED, "message": message}});
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// The metadata URL named in challenges: the configured resource's, else one for
/// `http://<Host><path>` of the request.
fn metadata_url(resource: Option<&ProtectedResource>, parts: &Parts) -> String {
    match resource {
        Some(r) => r.metadata_url(),
        None => {
            let path = parts.extensions.get::<OriginalUri>().map_or(parts.uri.path(), |u| u.0.path());
            ProtectedResource::new(format!("http://{}{path}", host(parts))).metadata_url()
        }
    }
}

/// The request's `Host` (`localhost` when absent or unreadable).
fn host(parts: &Parts) -> String {
    parts.headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost").to_owned()
}

/// A router serving the Protected Resource Metadata document of `resource` at
/// `/.well-known/oauth-protected-resource` and `/.well-known/oauth-protected-resource/mcp`
/// (merge it at the root of the app that nests the MCP endpoint at `/mcp`). Without a
/// configured resource, the document's resource is `http://<Host>/mcp`.
pub fn metadata_router(resource: Option<ProtectedResource>) -> Router {
    let serve = move |parts: Parts| {
        let resource = resource.clone();
        async move {
            let resource =
                resource.unwrap_or_else(|| ProtectedResource::new(format!("http://{}/mcp", host(&parts))));
            let body = resource.document().to_string();
            ([(header::CONTENT_TYPE, "application/json")], body)
        }
    };
    Router::new()
        .route(WELL_KNOWN, axum::routing::get(serve.clone()))
        .route(&format!("{WELL_KNOWN}/mcp"), axum::routing::get(serve))
}
