//! A raw JSON-RPC MCP test client for Pilotage servers, over three real transports.
//!
//! * [`Conn::duplex`]: a [`pilotage::Server`] served in-process with `serve_lines` over
//!   `tokio::io::duplex`; the client writes and reads newline-delimited JSON.
//! * [`Conn::stdio`]: an example binary spawned as a child process (stdin/stdout), killed on
//!   drop.
//! * [`Conn::http`]: Streamable HTTP, to an in-process [`HttpServer`] or any URL, in the
//!   [`HttpStyle::Plain`] (`application/json` only) or [`HttpStyle::Full`] (SSE) style.
//!
//! Every successful `tools/call` result is checked automatically (see [`schemas`]): exactly
//! one text content block, and for a Pilotage tool a `structuredContent` that satisfies both
//! the tool's advertised `outputSchema` and the official `$defs/<Kind>ToolOutput`.
//!
//! The `it` test binary declares it once, in `tests/it/main.rs` (the `conformance` example
//! includes it by path too). Set `PILOTAGE_TEST_TRANSCRIPT=1` to print every
//! request and response to stderr.
#![allow(dead_code, unused_imports)]

pub mod auth;
mod conn;
mod http;
mod lines;
pub mod scenario;
pub mod schemas;
mod served;
mod surface;

pub use conn::{Conn, ToolCall};
pub use http::{stateless_request, try_stateless_request, HttpServer, HttpStyle, STATELESS};
pub use lines::example_binary;
pub use schemas::{assert_def, ToolKind};
pub use served::Served;

/// The Pilotage extension identifier, also its `_meta` key.
pub const EXT: &str = "io.github.jafarsa0/pilotage";
/// The MCP revision the client negotiates.
pub const PROTOCOL: &str = "2025-11-25";
/// How long one request may wait for its response before the test fails.
pub const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// A port free on 127.0.0.1 now, for a server process a test starts.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
