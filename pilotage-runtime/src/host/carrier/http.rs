//! Streamable HTTP, written against the MCP transport directly: a sessionful connection
//! (`initialize`, then `Mcp-Session-Id` on every request) or a stateless one (MCP 2026-07-28:
//! no handshake, `server/discover` for the accelerator, and the client capabilities in every
//! request's `_meta`). Every answer is read in chunks up to `HostLimits::max_response_bytes`,
//! as JSON or as an SSE stream (read until the awaited response; the rest is drained in the
//! background, see [`sse`](super::sse)). A session listens on its standalone GET stream.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::sse::{drain, note, post, Events, Listener, Session};
use super::{
    extensions, read_answer, read_tools, ChangedFlag, ToolAnswer, ToolInfo, SESSION_REVISION,
    STATELESS_REVISION,
};
use crate::host::error::HostError;
use crate::host::limits::HostLimits;
use crate::model::manifest::EXTENSION_ID;

/// How long connecting waits for the server's answer to the standalone GET stream's request.
const LISTEN_WAIT: Duration = Duration::from_secs(2);

/// One Streamable HTTP endpoint.
pub(crate) struct HttpCarrier {
    client: reqwest::Client,
    url: String,
    authorization: Option<String>,
    stateless: bool,
    session: Option<String>,
    accelerator: Option<Value>,
    instructions: Option<String>,
    changed: ChangedFlag,
    /// The standalone GET stream of a session, when the server offers one.
    listener: Option<Listener>,
    next_id: AtomicU64,
    max_bytes: usize,
}

impl HttpCarrier {
    /// Connect to `url`: the handshake, or (stateless) `server/discover`. Unless `reuse`, a
    /// connection is closed once its answer is read (see `Connect::reuse_connections`).
    pub async fn connect(
        url: &str,
        bearer: Option<&str>,
        stateless: bool,
        reuse: bool,
        limits: &HostLimits,
    ) -> Result<HttpCarrier, HostError> {
        let client = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(if reuse { usize::MAX } else { 0 })
            .build()
            .map_err(|e| HostError::Transport(format!("an HTTP client: {e}")))?;
        let mut carrier = HttpCarrier {
            client,
            url: url.to_owned(),
            authorization: bearer.map(|t| format!("Bearer {t}")),
            stateless,
            session: None,
            accelerator: None,
            instructions: None,
            changed: ChangedFlag::default(),
            listener: None,
            next_id: AtomicU64::new(1),
            max_bytes: limits.max_response_bytes,
        };
        if stateless {
            // The accelerator is optional: a server without `server/discover` is still
            // discovered through `pilotage_manifest`.
            if let Ok(result) = carrier.request("server/discover", json!({})).await {
                carrier.accelerator = accelerator(&result);
                carrier.instructions = instructions(&result);
            }
        } else {
            let params = json!({
                "protocolVersion": SESSION_REVISION,
                "capabilities": {"extensions": extensions()},
                "clientInfo": {"name": "pilotage-host", "version": env!("CARGO_PKG_VERSION")},
            });
            let (result, session) = carrier.exchange("initialize", params).await?;
            carrier.session = session;
            carrier.accelerator = accelerator(&result);
            carrier.instructions = instructions(&result);
            carrier.notify("notifications/initialized").await?;
            if let Some(id) = carrier.session.clone() {
                let session = Session {
                    client: carrier.client.clone(),
                    url: carrier.url.clone(),
                    id,
                    revision: SESSION_REVISION,
                    authorization: carrier.authorization.clone(),
                    max_bytes: carrier.max_bytes,
                };
                carrier.listener = Listener::open(session, carrier.changed.clone(), LISTEN_WAIT).await;
            }
        }
        Ok(carrier)
    }

    pub async fn list_tools(&self, limits: &HostLimits) -> Result<Vec<ToolInfo>, HostError> {
        let mut tools = Vec::new();
        let mut params = json!({});
        loop {
            let result = self.request("tools/list", params).await?;
            read_tools(&result, &mut tools, limits)?;
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() => params = json!({ "cursor": next }),
                _ => return Ok(tools),
            }
        }
    }

    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolAnswer, HostError> {
        let result = self.request("tools/call", json!({"name": name, "arguments": arguments})).await?;
        Ok(read_answer(&result))
    }

    pub fn accelerator(&self) -> Option<Value> {
        self.accelerator.clone()
    }

    pub fn instructions(&self) -> Option<String> {
        self.instructions.clone()
    }

    pub fn changed(&self) -> &AtomicBool {
        &self.changed
    }

    /// Whether a notification may fail to reach the Host: always without a session; with one,
    /// while its standalone GET stream is not open.
    pub fn may_miss_notifications(&self) -> bool {
        !self.listener.as_ref().is_some_and(Listener::is_open)
    }

    /// One request; its JSON-RPC `result`.
    async fn request(&self, method: &str, params: Value) -> Result<Value, HostError> {
        Ok(self.exchange(method, params).await?.0)
    }

    /// One request: its `result` and the session id the answer carried.
    async fn exchange(&self, method: &str, mut params: Value) -> Result<(Value, Option<String>), HostError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if self.stateless {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": STATELESS_REVISION,
                "io.modelcontextprotocol/clientCapabilities": {"extensions": extensions()},
                "io.modelcontextprotocol/clientInfo": {"name": "pilotage-host", "version": env!("CARGO_PKG_VERSION")},
            });
        }
        let name = params.get("name").and_then(Value::as_str).map(str::to_owned);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut request = self.post(&body).header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        let response =
            request.send().await.map_err(|e| HostError::Transport(format!("POST {}: {e}", self.url)))?;
        let session =
            response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let status = response.status();
        let sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"));
        let message = self.read_message(response, sse, id, method).await;
        match message {
            Ok(message) => Ok((jsonrpc_result(message, method)?, session)),
            Err(_) if !status.is_success() => Err(HostError::Transport(format!("{method}: HTTP {status}"))),
            Err(e) => Err(e),
        }
    }

    /// A notification (no answer awaited beyond the HTTP status).
    async fn notify(&self, method: &str) -> Result<(), HostError> {
        let body = json!({"jsonrpc": "2.0", "method": method});
        let response = self
            .post(&body)
            .send()
            .await
            .map_err(|e| HostError::Transport(format!("POST {}: {e}", self.url)))?;
        if !response.status().is_success() {
            return Err(HostError::Transport(format!("{method}: HTTP {}", response.status())));
        }
        Ok(())
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let revision = if self.stateless { STATELESS_REVISION } else { SESSION_REVISION };
        post(&self.client, &self.url, revision, self.session.as_deref(), self.authorization.as_deref(), body)
    }

    /// The JSON-RPC message answering request `id`: the body (JSON), or the first SSE event
    /// that answers it (notifications on the way are noted: `tools/list_changed` raises the
    /// rediscovery flag; the rest of the stream is drained in the background). At most
    /// `max_bytes` are held: the whole JSON body, or one event.
    async fn read_message(
        &self,
        mut response: reqwest::Response,
        sse: bool,
        id: u64,
        method: &str,
    ) -> Result<Value, HostError> {
        let too_large =
            || HostError::TooLarge { what: format!("the answer to {method}"), limit: self.max_bytes };
        let read = |e: reqwest::Error| HostError::Transport(format!("{method}: {e}"));
        if !sse {
            let mut buffer: Vec<u8> = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(read)? {
                if buffer.len() + chunk.len() > self.max_bytes {
                    return Err(too_large());
                }
                buffer.extend_from_slice(&chunk);
            }
            return serde_json::from_slice(&buffer).map_err(|e| HostError::Malformed {
                what: method.to_owned(),
                reason: format!("not JSON: {e}"),
            });
        }
        let mut events = Events::new(self.max_bytes);
        let mut out = Vec::new();
        let mut ended = false;
        loop {
            match response.chunk().await.map_err(read)? {
                Some(chunk) => events.feed(&chunk, &mut out).map_err(|_| too_large())?,
                None => {
                    events.finish(&mut out);
                    ended = true;
                }
            }
            let mut found = None;
            for message in out.drain(..) {
                note(&message, &self.changed);
                if found.is_none() && message.get("id").and_then(Value::as_u64) == Some(id) {
                    found = Some(message);
                }
            }
            match found {
                Some(message) => {
                    if !ended {
                        drain(response, events, self.changed.clone());
                    }
                    return Ok(message);
                }
                None if ended => {
                    return Err(HostError::Malformed {
                        what: method.to_owned(),
                        reason: "the event stream ended without the response".into(),
                    })
                }
                None => {}
            }
        }
    }
}

/// A JSON-RPC response's `result`, or its `error` as a carrier error.
fn jsonrpc_result(mut message: Value, method: &str) -> Result<Value, HostError> {
    if let Some(error) = message.get("error") {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let text = error.get("message").and_then(Value::as_str).unwrap_or("").to_owned();
        return Err(HostError::Carrier { code, message: text });
    }
    match message.get_mut("result") {
        Some(result) if result.is_object() => Ok(result.take()),
        _ => Err(HostError::Malformed { what: method.to_owned(), reason: "no result object".into() }),
    }
}

/// The Pilotage member of an initialize or `server/discover` result's `_meta`.
fn accelerator(result: &Value) -> Option<Value> {
    result.get("_meta")?.get(EXTENSION_ID).cloned()
}

/// The `instructions` of an initialize or `server/discover` result.
fn instructions(result: &Value) -> Option<String> {
    result.get("instructions")?.as_str().map(str::to_owned)
}
