//! The `Host` header read exactly, before rmcp's DNS-rebinding check sees it.
//!
//! rmcp splits a `Host` at its last `:` and drops a port it cannot parse, so
//! `127.0.0.1:8080.evil.example` passes as the loopback host `127.0.0.1`. A `Host` is a host
//! and, after a `:`, a port of one to five digits up to 65535, and nothing else; any other is
//! refused here with HTTP 400 before a byte of the body is read.

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Refuses a request whose `Host` is not exactly a host and an optional port.
pub(super) async fn check_host(request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).map(|value| value.to_str().map(well_formed));
    match host {
        Some(Ok(true)) | None => next.run(request).await,
        Some(_) => {
            tracing::warn!(host = ?request.headers().get(header::HOST), "refused a malformed Host header");
            (StatusCode::BAD_REQUEST, "Bad Request: Invalid Host header").into_response()
        }
    }
}

/// Whether `value` is `host` or `host:port`: a bracketed IPv6 literal or a name without `:`,
/// and a port of digits that fits 16 bits.
pub(super) fn well_formed(value: &str) -> bool {
    let (host, port) = match value.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((literal, after)) => (literal, port_after(after)),
            None => return false,
        },
        None => match value.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (value, None),
        },
    };
    let host_ok = !host.is_empty() && host.bytes().all(|b| b.is_ascii_graphic() && !matches!(b, b'/' | b'@'));
    host_ok
        && port.is_none_or(|port| {
            port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit()) && port.parse::<u16>().is_ok()
        })
}

/// The port after a bracketed literal: none, or `:` and the port (`Some("")` is refused).
fn port_after(after: &str) -> Option<&str> {
    match after {
        "" => None,
        _ => Some(after.strip_prefix(':').unwrap_or("-")),
    }
}

#[cfg(test)]
mod tests {
    use super::well_formed;

    #[test]
    fn hosts_are_read_exactly() {
        for good in ["127.0.0.1", "127.0.0.1:8080", "localhost:1", "[::1]", "[::1]:65535", "example.com:80"] {
            assert!(well_formed(good), "{good}");
        }
        let bad = [
            "127.0.0.1:8080.evil.example",
            "127.0.0.1:",
            "127.0.0.1:65536",
            "127.0.0.1:123456",
            "localhost:80:80",
            "[::1]:8080.evil.example",
            "[::1]x",
            "[::1",
            ":80",
            "",
            "a b",
            "user@127.0.0.1",
            "127.0.0.1:+80",
        ];
        for bad in bad {
            assert!(!well_formed(bad), "{bad}");
        }
    }
}
