//! Server-Sent Events as Streamable HTTP uses them: the answer to a POST (read until the
//! awaited response, the rest drained in the background so the connection is reused), and the
//! standalone GET stream of a sessionful connection, where an rmcp server (and any server that
//! routes notifications outside requests) sends `notifications/tools/list_changed`. Every
//! event is held to `HostLimits::max_response_bytes`; every background read is bounded in time
//! or ends with the carrier.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::ChangedFlag;

/// How long the rest of an answer's event stream is read after its response: a server closes
/// the stream once it has answered; one that keeps it open loses the connection after this.
const DRAIN_TIME: Duration = Duration::from_secs(5);
/// The first and the longest pause before the standalone GET stream is opened again.
const RECONNECT_FIRST: Duration = Duration::from_millis(250);
const RECONNECT_MOST: Duration = Duration::from_secs(30);

/// Splits an event stream into the JSON-RPC messages of its events, holding at most
/// `max_bytes` of an unfinished event.
pub(crate) struct Events {
    pending: Vec<u8>,
    max_bytes: usize,
}

/// An event larger than the bound.
#[derive(Debug)]
pub(crate) struct EventTooLarge;

impl Events {
    pub fn new(max_bytes: usize) -> Events {
        Events { pending: Vec::new(), max_bytes }
    }

    /// Adds `chunk`; the messages of the events it completes, in order, are pushed to `out`.
    /// An event that is not JSON (a comment, a keep-alive, a priming event) yields nothing.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Value>) -> Result<(), EventTooLarge> {
        // A boundary may straddle the chunks: look again from three bytes before the new one.
        let mut from = self.pending.len().saturating_sub(3);
        self.pending.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(end) = find_event_end(&self.pending[from..]).map(|e| e + from) {
            if let Some(message) = parse_event(&self.pending[start..end]) {
                out.push(message);
            }
            start = end;
            from = end;
        }
        self.pending.drain(..start);
        if self.pending.len() > self.max_bytes {
            return Err(EventTooLarge);
        }
        Ok(())
    }

    /// The stream ended: an unterminated last event still counts.
    pub fn finish(&mut self, out: &mut Vec<Value>) {
        if !self.pending.is_empty() {
            let _ = self.feed(b"\n\n", out);
        }
    }
}

/// The JSON-RPC message of one event's `data:` lines, if they hold JSON.
fn parse_event(event: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(event);
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    if data.is_empty() {
        return None;
    }
    serde_json::from_str(&data.join("\n")).ok()
}

/// The length of the first complete event of `bytes` (its blank line included), if any.
fn find_event_end(bytes: &[u8]) -> Option<usize> {
    let lf = bytes.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    let crlf = bytes.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Raises `changed` when `message` is `notifications/tools/list_changed`.
pub(crate) fn note(message: &Value, changed: &AtomicBool) {
    if message.get("method").and_then(Value::as_str) == Some("notifications/tools/list_changed") {
        changed.store(true, Ordering::Release);
    }
}

/// Reads the rest of an answer's event stream in the background, for at most [`DRAIN_TIME`]:
/// the connection goes back to the pool instead of being torn down, and a notification sent
/// after the response is still noted.
pub(crate) fn drain(mut response: reqwest::Response, mut events: Events, changed: ChangedFlag) {
    tokio::spawn(async move {
        let _ = tokio::time::timeout(DRAIN_TIME, async {
            let mut out = Vec::new();
            while let Ok(Some(chunk)) = response.chunk().await {
                if events.feed(&chunk, &mut out).is_err() {
                    return;
                }
                out.drain(..).for_each(|m| note(&m, &changed));
            }
        })
        .await;
    });
}

/// What the standalone GET stream needs to open and answer on a session.
#[derive(Clone)]
pub(crate) struct Session {
    pub client: reqwest::Client,
    pub url: String,
    pub id: String,
    pub revision: &'static str,
    pub authorization: Option<String>,
    pub max_bytes: usize,
}

impl Session {
    fn get(&self) -> reqwest::RequestBuilder {
        let request = self
            .client
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", self.revision);
        match &self.authorization {
            Some(a) => request.header("authorization", a),
            None => request,
        }
    }

    /// Answers a request the server sent on the stream: `ping` with an empty result, anything
    /// else with "method not found" (the Host declares no client features).
    async fn answer(&self, request: &Value) {
        let Some(id) = request.get("id") else { return };
        let answer = if request["method"] == "ping" {
            json!({"jsonrpc": "2.0", "id": id, "result": {}})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "not supported by this Host"}})
        };
        let post = post(
            &self.client,
            &self.url,
            self.revision,
            Some(&self.id),
            self.authorization.as_deref(),
            &answer,
        );
        let _ = tokio::time::timeout(DRAIN_TIME, post.send()).await;
    }
}

/// A POST of `body` to the endpoint, with the headers every message carries.
pub(super) fn post(
    client: &reqwest::Client,
    url: &str,
    revision: &str,
    session: Option<&str>,
    authorization: Option<&str>,
    body: &Value,
) -> reqwest::RequestBuilder {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", revision)
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    if let Some(authorization) = authorization {
        request = request.header("authorization", authorization);
    }
    request
}

/// The standalone GET stream of a session, listened to until the carrier drops it.
pub(crate) struct Listener {
    task: tokio::task::JoinHandle<()>,
    open: Arc<AtomicBool>,
}

impl Listener {
    /// Opens the stream (waiting at most `wait` for the server's answer to the first GET) and
    /// listens in the background; `None` when the server offers none (any answer but an event
    /// stream, `405` included, or no answer in time).
    pub async fn open(session: Session, changed: ChangedFlag, wait: Duration) -> Option<Listener> {
        let first = tokio::time::timeout(wait, session.get().send()).await.ok()?.ok()?;
        if !is_event_stream(&first) {
            return None;
        }
        let open = Arc::new(AtomicBool::new(true));
        let task = tokio::spawn(listen(session, first, changed, open.clone()));
        Some(Listener { task, open })
    }

    /// Whether the stream is open now (notifications reach the Host).
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn is_event_stream(response: &reqwest::Response) -> bool {
    response.status().is_success()
        && response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"))
}

/// Reads the stream, noting `tools/list_changed`; when it ends, opens it again after a pause
/// that doubles up to [`RECONNECT_MOST`]. A reopened stream raises `changed`, since a change
/// announced while it was closed is lost; a server that stops offering it ends the task.
async fn listen(session: Session, first: reqwest::Response, changed: ChangedFlag, open: Arc<AtomicBool>) {
    let mut response = first;
    let mut pause = RECONNECT_FIRST;
    loop {
        let mut events = Events::new(session.max_bytes);
        let mut out = Vec::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            if events.feed(&chunk, &mut out).is_err() {
                break;
            }
            for message in out.drain(..) {
                note(&message, &changed);
                if message.get("method").is_some() && message.get("id").is_some() {
                    session.answer(&message).await;
                }
            }
            pause = RECONNECT_FIRST;
        }
        open.store(false, Ordering::Release);
        loop {
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(RECONNECT_MOST);
            match session.get().send().await {
                Ok(next) if is_event_stream(&next) => {
                    response = next;
                    break;
                }
                Ok(next) if next.status().is_client_error() => return,
                _ => continue,
            }
        }
        open.store(true, Ordering::Release);
        changed.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_both_line_endings() {
        let mut events = Events::new(1024);
        let mut out = Vec::new();
        events.feed(b"event: message\ndata: {\"a\"", &mut out).unwrap();
        assert!(out.is_empty());
        events.feed(b": 1}\n", &mut out).unwrap();
        assert!(out.is_empty());
        events.feed(b"\n: keep-alive\n\ndata: {\"b\": 2}\r\n\r\ndata: {\"c\"", &mut out).unwrap();
        assert_eq!(out, vec![json!({"a": 1}), json!({"b": 2})]);
        out.clear();
        events.finish(&mut out);
        assert!(out.is_empty(), "an unfinished event that is not JSON yields nothing");
    }

    #[test]
    fn an_unfinished_event_past_the_bound_is_refused_and_a_finished_one_is_not_held() {
        let mut events = Events::new(16);
        let mut out = Vec::new();
        events.feed(b"data: {\"long\": \"abcdefghij\"}\n\n", &mut out).unwrap();
        assert_eq!(out.len(), 1, "complete events are not held");
        assert!(events.feed(b"data: \"0123456789abcdefg", &mut out).is_err());
    }
}
