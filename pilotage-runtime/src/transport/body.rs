//! Reading a POST body within its bounds: at most [`MAX_BODY_BYTES`], within the body read
//! timeout, and every refusal on the wire as the HTTP edge gives it.
//!
//! A body declared larger than the bound is refused with HTTP 413 at once, before a byte of
//! it is read (not after the read timeout). Every 413 says `Connection: close`; a body only
//! somewhat over the bound (at most [`DRAIN_BYTES`] more) is read to its end and discarded
//! first, so that the connection then closes cleanly instead of being reset under a client
//! still sending.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use serde_json::{json, Value};

/// Largest accepted POST body (the same 4 MiB default rmcp uses).
pub(super) const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// How far past [`MAX_BODY_BYTES`] a refused body is still read (and discarded) so that its
/// connection closes cleanly.
const DRAIN_BYTES: usize = 4 * 1024 * 1024;
const JSON_MIME: &str = "application/json";

/// How a body read ended short of a body.
enum Short {
    TooLarge,
    TimedOut,
    Failed(axum::Error),
}

/// Reads a POST body of at most [`MAX_BODY_BYTES`] within `timeout`, or the error response.
pub(super) async fn read_body(headers: &HeaderMap, body: Body, timeout: Duration) -> Result<Bytes, Response> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    let read = match declared {
        Some(length) if length > (MAX_BODY_BYTES + DRAIN_BYTES) as u64 => Err(Short::TooLarge),
        _ => collect(body, timeout).await,
    };
    match read {
        Ok(bytes) => Ok(bytes),
        Err(Short::TooLarge) => {
            let message = format!("Invalid Request: body exceeds {MAX_BODY_BYTES} bytes");
            Err(closing(json_error(StatusCode::PAYLOAD_TOO_LARGE, -32600, message)))
        }
        Err(Short::TimedOut) => {
            let message = format!("Invalid Request: body not received within {timeout:?}");
            Err(closing(json_error(StatusCode::REQUEST_TIMEOUT, -32600, message)))
        }
        Err(Short::Failed(e)) => {
            let message = format!("Failed to read request body: {e}");
            Err((StatusCode::BAD_REQUEST, message).into_response())
        }
    }
}

/// The body's bytes, keeping at most [`MAX_BODY_BYTES`]; past them, the rest is read and
/// discarded up to [`DRAIN_BYTES`] and the body is too large. The whole read is bounded by
/// `timeout` (a body found too large stays too large when the drain runs out of time).
async fn collect(mut body: Body, timeout: Duration) -> Result<Bytes, Short> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut kept: Vec<u8> = Vec::new();
    let mut over = 0usize;
    loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) if over > 0 => return Err(Short::TooLarge),
            Err(_) => return Err(Short::TimedOut),
            Ok(None) if over > 0 => return Err(Short::TooLarge),
            Ok(None) => return Ok(Bytes::from(kept)),
            Ok(Some(Err(e))) if over > 0 => {
                tracing::debug!(error = %e, "a refused body ended with an error");
                return Err(Short::TooLarge);
            }
            Ok(Some(Err(e))) => return Err(Short::Failed(e)),
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else { continue };
        if over == 0 && kept.len() + data.len() <= MAX_BODY_BYTES {
            kept.extend_from_slice(&data);
            continue;
        }
        if over == 0 {
            kept = Vec::new();
        }
        over = over.saturating_add(data.len());
        if over > DRAIN_BYTES {
            return Err(Short::TooLarge);
        }
    }
}

/// `response` with `Connection: close`: the server closes the connection after it.
fn closing(mut response: Response) -> Response {
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

pub(super) fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, JSON_MIME)], body.to_string()).into_response()
}

pub(super) fn json_error(status: StatusCode, code: i64, message: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    json_response(status, &body)
}
