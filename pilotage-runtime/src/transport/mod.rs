//! Transports that expose any [`rmcp::ServerHandler`] as a Pilotage MCP server.
//!
//! rmcp provides the protocol machinery; these modules close the interop gaps
//! the Pilotage spec cares about:
//!
//! * [`stdio`]: newline-delimited JSON-RPC over a reader/writer pair. Unlike
//!   rmcp's own async read/write transport, a line that is not JSON gets a
//!   JSON-RPC `-32700` Parse error reply instead of being silently dropped.
//! * [`http`]: a Streamable HTTP endpoint for an axum [`Router`](axum::Router).
//!   Clients that only accept `application/json` get a plain JSON body instead
//!   of `406 Not Acceptable` or an SSE stream, and a body that is not JSON gets
//!   HTTP 400 with a JSON-RPC `-32700` error instead of a `415` text body.
//!
//! Both judge each incoming frame the same way first (the private `frame` module): an
//! error reply carries the request's id wherever it is readable, a notification is never
//! answered, and a `tools/call` nested too deep for a JSON parser gets the runtime's
//! `bounds_exceeded` result.

#[cfg(feature = "http")]
pub mod auth;
#[cfg(feature = "http")]
mod body;
#[cfg(feature = "http")]
mod edge;
mod frame;
#[cfg(feature = "http")]
mod host;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "jwt")]
pub mod jwt;
#[cfg(feature = "http")]
mod sessions;
pub mod stdio;

#[cfg(feature = "http")]
pub use self::http::{mcp_service, raise_nofile_limit, serve_http, serve_listener, HttpOptions};
pub use self::stdio::{serve_lines, serve_stdio};

use crate::server::Server;

/// Serving a built [`Server`] over each transport.
impl Server {
    /// Serve MCP over stdin/stdout until the client disconnects.
    pub async fn serve_stdio(&self) -> std::io::Result<()> {
        stdio::serve_stdio(self.handler()).await
    }

    /// Serve MCP over any byte stream pair (tests use `tokio::io::duplex`).
    pub async fn serve_lines<R, W>(&self, reader: R, writer: W) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        stdio::serve_lines(self.handler(), reader, writer).await
    }
}

/// Serving a built [`Server`] over Streamable HTTP (feature `http`).
#[cfg(feature = "http")]
impl Server {
    /// An axum router serving Streamable HTTP at its root; mount it with `nest_service`. The
    /// builder's authenticator and protected resource, when set, replace those of `options`.
    pub fn router(&self, options: HttpOptions) -> axum::Router {
        let server = self.clone();
        http::mcp_service(move || server.handler(), self.identify(options))
    }

    /// `options` with the builder's authenticator and protected resource, where set.
    fn identify(&self, mut options: HttpOptions) -> HttpOptions {
        let identity = self.identity();
        if let Some(authenticator) = &identity.authenticator {
            options.authenticator = Some(authenticator.clone());
        }
        if let Some(resource) = &identity.resource {
            options.protected_resource = Some(resource.clone());
        }
        options
    }

    /// Serve Streamable HTTP at `http://addr/mcp` until ctrl-c (see [`http::serve_http`]).
    pub async fn serve_http(&self, addr: std::net::SocketAddr, options: HttpOptions) -> std::io::Result<()> {
        let server = self.clone();
        let options = self.identify(options);
        http::serve_http(move || server.handler(), addr, options).await
    }

    /// Serve Streamable HTTP at `/mcp` on a bound `listener` until `shutdown` completes
    /// (see [`http::serve_listener`]).
    pub async fn serve_listener(
        &self,
        listener: tokio::net::TcpListener,
        options: HttpOptions,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> std::io::Result<()> {
        let server = self.clone();
        let options = self.identify(options);
        http::serve_listener(move || server.handler(), listener, options, shutdown).await
    }
}

/// The JSON-RPC error object sent for input that is not JSON at all.
///
/// Such input has no id to reply to, so `id` is `null`.
pub(crate) fn parse_error(detail: impl std::fmt::Display) -> serde_json::Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": -32700, "message": format!("Parse error: {detail}") },
    })
}

/// The JSON-RPC `-32600` reply for a JSON value that is not a JSON-RPC 2.0 message (a request,
/// notification or response object), or `None` when it is one. The reply echoes the value's
/// `id` when it is a string or a number.
pub(crate) fn invalid_request(value: &serde_json::Value) -> Option<serde_json::Value> {
    use serde_json::Value;
    let Value::Object(m) = value else {
        return Some(invalid_request_reply(Value::Null));
    };
    let id_ok =
        |v: Option<&Value>| matches!(v, None | Some(Value::String(_) | Value::Number(_) | Value::Null));
    let version_ok = m.get("jsonrpc") == Some(&Value::String("2.0".into()));
    let request = matches!(m.get("method"), Some(Value::String(_))) && id_ok(m.get("id"));
    let response = m.contains_key("id") && (m.contains_key("result") != m.contains_key("error"));
    if version_ok && (request || response) {
        return None;
    }
    let id = match m.get("id") {
        Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
        _ => Value::Null,
    };
    Some(invalid_request_reply(id))
}

fn invalid_request_reply(id: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": -32600, "message": "Invalid Request: not a JSON-RPC 2.0 message" },
    })
}
