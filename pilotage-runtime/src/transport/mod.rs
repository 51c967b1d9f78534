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

pub mod http;
pub mod stdio;

pub use self::http::{mcp_service, serve_http, HttpOptions};
pub use self::stdio::{serve_lines, serve_stdio};

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
