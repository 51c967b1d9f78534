//! Streamable HTTP: an in-process server on 127.0.0.1 and the two client styles.

use std::sync::Arc;

use serde_json::Value;

use super::lines::AbortOnDrop;
use super::TIMEOUT;

/// How the client talks Streamable HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpStyle {
    /// `content-type: application/json` only; expects a plain JSON body back.
    Plain,
    /// `Accept: application/json, text/event-stream`; reads the JSON-RPC response from the
    /// SSE `data:` lines (or a JSON body when the server answers with one).
    Full,
}

/// A [`pilotage::Server`] served over Streamable HTTP at `http://127.0.0.1:<port>/mcp`, in
/// this process, until dropped (and until every [`super::Conn`] made from it is dropped).
#[derive(Clone)]
pub struct HttpServer {
    url: String,
    task: Arc<AbortOnDrop>,
}

impl HttpServer {
    /// Bind an ephemeral port and serve `server.router(HttpOptions::default())` at `/mcp`.
    pub async fn start(server: &pilotage::Server) -> HttpServer {
        Self::start_with(server, pilotage::transport::HttpOptions::default()).await
    }

    /// As [`HttpServer::start`], with explicit options.
    pub async fn start_with(
        server: &pilotage::Server,
        options: pilotage::transport::HttpOptions,
    ) -> HttpServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let app = axum::Router::new().nest_service("/mcp", server.router(options));
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                eprintln!("axum::serve ended with an error: {e}");
            }
        });
        HttpServer { url: format!("http://{addr}/mcp"), task: Arc::new(AbortOnDrop(task)) }
    }

    /// The endpoint URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A new client connection (a new MCP session once initialized).
    pub fn connect(&self, style: HttpStyle) -> super::Conn {
        super::Conn::from_http(
            Http::new(&self.url, style, Some(self.task.clone())),
            format!("http-{style:?}"),
        )
    }
}

/// One HTTP client: the endpoint, its style and the session it was given.
pub(crate) struct Http {
    client: reqwest::Client,
    url: String,
    pub style: HttpStyle,
    /// The `mcp-session-id` the server issued, sent on every later request.
    pub session: Option<String>,
    /// The negotiated protocol version, sent as `MCP-Protocol-Version` after initialize.
    pub protocol: Option<String>,
    /// Status and content type of the last response.
    pub last_status: Option<u16>,
    pub last_content_type: Option<String>,
    _server: Option<Arc<AbortOnDrop>>,
}

impl Http {
    pub fn new(url: &str, style: HttpStyle, server: Option<Arc<AbortOnDrop>>) -> Http {
        Http {
            client: reqwest::Client::builder().no_proxy().build().expect("an HTTP client"),
            url: url.to_owned(),
            style,
            session: None,
            protocol: None,
            last_status: None,
            last_content_type: None,
            _server: server,
        }
    }

    /// POST `body` as is. Returns the JSON-RPC response the server sent back, `None` for an
    /// accepted notification (HTTP 202 without a body).
    pub async fn post(&mut self, body: &str) -> Option<Value> {
        match tokio::time::timeout(TIMEOUT, self.post_inner(body)).await {
            Ok(reply) => reply,
            Err(_) => panic!("no HTTP response within {TIMEOUT:?} to {body}"),
        }
    }

    async fn post_inner(&mut self, body: &str) -> Option<Value> {
        let mut request =
            self.client.post(&self.url).header("content-type", "application/json").body(body.to_owned());
        if self.style == HttpStyle::Full {
            request = request.header("accept", "application/json, text/event-stream");
        }
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        if let Some(protocol) = &self.protocol {
            request = request.header("mcp-protocol-version", protocol);
        }
        let mut response = request.send().await.unwrap_or_else(|e| panic!("POST {} failed: {e}", self.url));
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase());
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = Some(session.to_str().expect("mcp-session-id is ASCII").to_owned());
        }
        self.last_status = Some(status);
        self.last_content_type = content_type.clone();
        if status == 202 {
            let rest = response.bytes().await.expect("202 body");
            assert!(rest.is_empty(), "202 Accepted with a body: {rest:?}");
            return None;
        }
        match content_type.as_deref() {
            Some("application/json") => {
                let bytes = response.bytes().await.expect("the JSON body");
                Some(serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                    panic!("HTTP {status}: body is not JSON ({e}): {}", String::from_utf8_lossy(&bytes))
                }))
            }
            Some("text/event-stream") => {
                assert_eq!(
                    self.style,
                    HttpStyle::Full,
                    "a plain-JSON client (no text/event-stream in Accept) got an SSE stream, HTTP {status}"
                );
                let mut events = Sse::default();
                loop {
                    match response.chunk().await {
                        Ok(Some(chunk)) => {
                            if let Some(message) = events.push(&chunk) {
                                return Some(message);
                            }
                        }
                        Ok(None) => {
                            panic!("the SSE stream ended without a JSON-RPC response (HTTP {status})")
                        }
                        Err(e) => panic!("the SSE stream failed: {e}"),
                    }
                }
            }
            other => {
                let bytes = response.bytes().await.unwrap_or_default();
                panic!(
                    "HTTP {status} with content type {other:?}, neither JSON nor SSE: {}",
                    String::from_utf8_lossy(&bytes)
                )
            }
        }
    }
}

/// Incremental SSE parser yielding the first event whose data is a JSON-RPC response.
#[derive(Default)]
struct Sse {
    line: Vec<u8>,
    data: Option<String>,
}

impl Sse {
    fn push(&mut self, chunk: &[u8]) -> Option<Value> {
        for &byte in chunk {
            if byte != b'\n' {
                self.line.push(byte);
                continue;
            }
            let line = std::mem::take(&mut self.line);
            let line = String::from_utf8_lossy(line.strip_suffix(b"\r").unwrap_or(&line)).into_owned();
            if line.is_empty() {
                if let Some(data) = self.data.take() {
                    if let Ok(message) = serde_json::from_str::<Value>(&data) {
                        let is_response = message.get("method").is_none()
                            && message.get("id").is_some()
                            && (message.get("result").is_some() || message.get("error").is_some());
                        if is_response {
                            return Some(message);
                        }
                    }
                }
                continue;
            }
            if let Some(value) = line.strip_prefix("data:") {
                let value = value.strip_prefix(' ').unwrap_or(value);
                match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                }
            }
        }
        None
    }
}

/// The MCP revision without sessions.
pub const STATELESS: &str = "2026-07-28";

/// One request on the stateless 2026-07-28 path: no session, the client capabilities in the
/// request's `_meta`, the protocol version in `_meta` and in the headers, and, when given, an
/// `Authorization` value. Asserts that no session was issued; returns the JSON-RPC reply.
pub async fn stateless_request(
    url: &str,
    method: &str,
    params: Value,
    capabilities: Value,
    authorization: Option<&str>,
) -> Value {
    try_stateless_request(url, method, params, capabilities, authorization)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// [`stateless_request`], with a server that does not answer (or answers no JSON) as an error
/// rather than a panic: for tests that kill servers under load.
pub async fn try_stateless_request(
    url: &str,
    method: &str,
    mut params: Value,
    capabilities: Value,
    authorization: Option<&str>,
) -> Result<Value, String> {
    params["_meta"] = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "stateless", "version": "0"},
    });
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", STATELESS)
        .header("mcp-method", method);
    // MCP 2026-07-28 names the target in `Mcp-Name`: a tool's name, or a task's id.
    if let Some(name) = params["name"].as_str().or(params["taskId"].as_str()) {
        request = request.header("mcp-name", name);
    }
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    let response = request.body(body.to_string()).send().await.map_err(|e| format!("POST {url}: {e}"))?;
    assert!(response.headers().get("mcp-session-id").is_none(), "a stateless request got a session");
    let text = response.text().await.map_err(|e| format!("reading the answer of {url}: {e}"))?;
    let json = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| d.contains("\"id\""))
        .unwrap_or(text.trim());
    serde_json::from_str(json).map_err(|e| format!("not JSON ({e}): {text}"))
}
