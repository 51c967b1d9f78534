//! Streamable HTTP endpoint built on rmcp's [`StreamableHttpService`].
//!
//! [`mcp_service`] returns an axum [`Router`] serving MCP at its root; mount
//! it wherever you like (`Router::new().nest("/mcp", mcp_service(..))`).
//! [`serve_http`] does that at `/mcp` and runs the server until ctrl-c.
//!
//! rmcp implements the Streamable HTTP spec strictly. An adapter in front of
//! it fixes two interop gaps for POST requests:
//!
//! * **Plain-JSON clients.** rmcp answers `406 Not Acceptable` unless the
//!   `Accept` header lists both `application/json` and `text/event-stream`,
//!   and otherwise usually answers with an SSE stream. When a POST does not
//!   accept `text/event-stream`, the adapter asks rmcp for both, reads the SSE
//!   stream up to the first JSON-RPC response or error, and returns that as a
//!   plain `application/json` body with status 200 (keeping `Mcp-Session-Id`
//!   and the other headers). Clients that accept SSE get rmcp's response as is.
//! * **Malformed JSON.** rmcp answers `415` with a text body when the POST body
//!   is not JSON. The adapter answers HTTP 400 with a JSON-RPC `-32700` Parse
//!   error instead. Bodies over 4 MiB get HTTP 413.
//! * **Frames rmcp cannot read.** The body is judged as the stdio transport judges a line
//!   (the private `frame` module): an invalid request gets HTTP 400 with a JSON-RPC error
//!   carrying its id where readable, a notification rmcp cannot read gets `202 Accepted`
//!   and no body, and a `tools/call` nested too deep to parse gets HTTP 200 with the
//!   runtime's `bounds_exceeded` tool result as a plain JSON body.
//! * **A `tools/call`'s arguments**, for pilotage's own handler: rmcp's parse of a frame buffers
//!   every member of the arguments into serde's content tree and clones it, about as costly as
//!   a 500-step program's validation. The adapter parses the arguments into their map once,
//!   hands rmcp the frame with `{}` in their place, and the handler takes them from the
//!   request's head. Other handlers, and a pilotage server whose tools bind an argument to a
//!   header (`x-mcp-header`, which rmcp checks against the frame), get the frame whole.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use http_body_util::{BodyExt, Limited};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServerHandler;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::auth::{self, Authenticator, Gate, ProtectedResource};
use super::body::{json_error, json_response, read_body, MAX_BODY_BYTES};
use super::edge::{self, EdgeLimits};
use super::frame::{self, Judged};
use super::host;
use super::sessions::{self, CappedSessions};
use crate::server::{LiftedArguments, PilotageHandler};

const JSON_MIME: &str = "application/json";
const SSE_MIME: &str = "text/event-stream";
const SESSION_HEADER: &str = "mcp-session-id";

/// Origins accepted by default: loopback pages on any port.
const LOOPBACK_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// How the Streamable HTTP endpoint behaves, and the bounds it puts on clients.
///
/// The connection settings (`max_connections`, `header_read_timeout`) are applied by
/// [`serve_http`] and [`serve_listener`]; a [`Router`] from [`mcp_service`] mounted elsewhere
/// gets the others (origins, sessions, body timeout) and its host server sets the rest.
///
/// A public deployment names its own hosts and origins and sizes its sessions:
///
/// ```
/// use std::time::Duration;
/// use pilotage::prelude::*;
///
/// let options = HttpOptions {
///     allowed_hosts: Some(vec!["mcp.example.com".into()]),
///     allowed_origins: Some(vec!["https://app.example.com:443".into()]),
///     max_sessions: 4096,
///     session_idle: Duration::from_secs(600),
///     ..HttpOptions::default()
/// };
/// assert_eq!(options.max_connections, 4096);
/// // server.serve_http("0.0.0.0:8787".parse()?, options).await?
/// ```
#[derive(Clone)]
pub struct HttpOptions {
    /// `false` (the default): legacy protocol versions get `Mcp-Session-Id`
    /// sessions, and the handler factory runs once per session.
    /// `true`: no sessions; the factory runs once per request, and simple
    /// responses are sent as `application/json` rather than SSE.
    ///
    /// Requests on protocol `2026-07-28` or later are served statelessly
    /// either way, as that revision has no sessions.
    pub stateless: bool,
    /// Accepted `Host` header values (`"example.com"` or `"example.com:8080"`),
    /// checked against DNS rebinding. `None` keeps rmcp's default of loopback
    /// names only (`localhost`, `127.0.0.1`, `::1`); an empty list accepts any
    /// host.
    pub allowed_hosts: Option<Vec<String>>,
    /// Accepted `Origin` header values, as the MCP transport specification requires against
    /// cross-site requests from browsers: entries like `"https://app.example.com:443"`, with
    /// `:*` for any port (see rmcp's `StreamableHttpServerConfig::allowed_origins`). A request
    /// without `Origin` always passes; one with another `Origin` gets HTTP 403.
    ///
    /// `None` (the default) accepts loopback pages only: `http://localhost:*`,
    /// `http://127.0.0.1:*` and `http://[::1]:*`. An empty list accepts any origin.
    pub allowed_origins: Option<Vec<String>>,
    /// Most TCP connections served at once; default 4096, lowered at start to the process's
    /// open-file limit minus 64. Past it the server stops accepting: new connections wait in
    /// the kernel's listen backlog until a served one closes (they are not refused).
    pub max_connections: usize,
    /// Time a client has to send a request's headers, counted from the moment the
    /// connection awaits a request: on accept, and again after each response. It is thus also
    /// the keep-alive idle timeout (hyper's HTTP/1 server uses one timer for both). Default
    /// 10 s. When it expires the connection is closed.
    pub header_read_timeout: Duration,
    /// Time a client has to send a whole POST body once its headers are in; default 10 s.
    /// Past it the request gets HTTP 408 with a JSON-RPC `-32600` error and the connection
    /// is closed.
    pub body_read_timeout: Duration,
    /// Most live MCP sessions; default 1024. An `initialize` past it gets HTTP 503 with a
    /// JSON-RPC `-32000` error saying the session limit was reached; closing a session (HTTP
    /// DELETE) or its idle expiry frees the slot.
    pub max_sessions: usize,
    /// A session with no traffic for this long is closed (rmcp's `SessionConfig::keep_alive`);
    /// default 300 s, rmcp's own default: long enough for the minutes a person or a model
    /// may spend between tool calls, short enough that abandoned sessions free their slot.
    pub session_idle: Duration,
    /// Verifies every request to the endpoint (see [`super::auth`]): a refused request gets
    /// HTTP 401 and a `WWW-Authenticate: Bearer` challenge, a verified one carries its
    /// [`Caller`](crate::engine::Caller) in its extensions. `None` (the default): no verification.
    /// [`Server::router`](crate::Server::router) and the `Server::serve_*` methods fill it from
    /// [`ServerBuilder::authenticator`](crate::ServerBuilder::authenticator).
    pub authenticator: Option<Arc<dyn Authenticator>>,
    /// The Protected Resource Metadata named in challenges and served by [`serve_http`] and
    /// [`serve_listener`] (filled like `authenticator`). `None`: derived from each request's
    /// `Host` as `http://<Host>/mcp`.
    pub protected_resource: Option<ProtectedResource>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("stateless", &self.stateless)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("max_connections", &self.max_connections)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("max_sessions", &self.max_sessions)
            .field("session_idle", &self.session_idle)
            .field("authenticator", &self.authenticator.as_ref().map(|_| "Authenticator"))
            .field("protected_resource", &self.protected_resource)
            .finish()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            stateless: false,
            allowed_hosts: None,
            allowed_origins: None,
            max_connections: 4096,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(10),
            max_sessions: 1024,
            session_idle: Duration::from_secs(300),
            authenticator: None,
            protected_resource: None,
        }
    }
}

/// Builds an axum [`Router`] serving MCP Streamable HTTP (POST, GET and DELETE)
/// at its root `/`, with a fresh handler from `factory` per session (or per
/// request when stateless).
///
/// Mount it with `Router::new().nest("/mcp", mcp_service(factory, options))`.
pub fn mcp_service<S, F>(factory: F, options: HttpOptions) -> Router
where
    F: Fn() -> S + Send + Sync + 'static,
    S: ServerHandler,
{
    router(factory, options, CancellationToken::new())
}

/// Binds `addr`, serves [`mcp_service`] at `/mcp`, and runs until ctrl-c. With an
/// authenticator or a protected resource in `options`, also serves the Protected Resource
/// Metadata at `/.well-known/oauth-protected-resource` (and `.../mcp`).
///
/// First raises the process's soft open-file limit to its hard limit (see
/// [`raise_nofile_limit`]), so that many idle connections do not lock new clients out.
///
/// On ctrl-c, open sessions and SSE streams are closed and in-flight HTTP
/// requests are allowed to finish before this returns `Ok(())`.
pub async fn serve_http<S, F>(factory: F, addr: SocketAddr, options: HttpOptions) -> std::io::Result<()>
where
    F: Fn() -> S + Send + Sync + 'static,
    S: ServerHandler,
{
    match raise_nofile_limit() {
        Ok((before, after)) => tracing::info!(before, after, "open-file limit (soft RLIMIT_NOFILE)"),
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit"),
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(address = %listener.local_addr()?, "serving MCP over HTTP at /mcp");
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for ctrl-c; serving until killed");
            std::future::pending::<()>().await;
        }
    };
    serve_listener(factory, listener, options, ctrl_c).await
}

/// Serves [`mcp_service`] at `/mcp` on an already bound `listener` until `shutdown`
/// completes, with the connection bounds of `options` (`max_connections`,
/// `header_read_timeout`) and `TCP_NODELAY` on every connection.
///
/// On shutdown, open sessions and SSE streams are closed and in-flight HTTP requests are
/// allowed to finish before this returns `Ok(())`. Unlike [`serve_http`], this leaves the
/// open-file limit alone.
pub async fn serve_listener<S, F>(
    factory: F,
    listener: tokio::net::TcpListener,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()>
where
    F: Fn() -> S + Send + Sync + 'static,
    S: ServerHandler,
{
    let cancel = CancellationToken::new();
    let limits = EdgeLimits {
        max_connections: options.max_connections,
        header_read_timeout: options.header_read_timeout,
    };
    let metadata = (options.authenticator.is_some() || options.protected_resource.is_some())
        .then(|| auth::metadata_router(options.protected_resource.clone()));
    let mut app = Router::new().nest("/mcp", router(factory, options, cancel.clone()));
    if let Some(metadata) = metadata {
        app = app.merge(metadata);
    }
    let shutdown = async move {
        shutdown.await;
        // Ends rmcp's sessions and long-lived SSE streams, so that the
        // graceful shutdown does not wait on them forever.
        cancel.cancel();
    };
    edge::serve_connections(listener, app, limits, shutdown).await
}

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit and returns the soft limit
/// before and after (unchanged where the platform has no such limit). [`serve_http`] calls it.
pub fn raise_nofile_limit() -> std::io::Result<(u64, u64)> {
    edge::raise_nofile_limit()
}

fn router<S, F>(factory: F, options: HttpOptions, shutdown: CancellationToken) -> Router
where
    F: Fn() -> S + Send + Sync + 'static,
    S: ServerHandler,
{
    let origins = options.allowed_origins.unwrap_or_else(|| LOOPBACK_ORIGINS.map(String::from).to_vec());
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.stateless)
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_allowed_origins(origins)
        .with_cancellation_token(shutdown);
    if let Some(hosts) = options.allowed_hosts {
        config = config.with_allowed_hosts(hosts);
    }
    let sessions = Arc::new(CappedSessions::new(options.max_sessions, options.session_idle));
    let owners = sessions.owners.clone();
    let adapter = Adapter { body_read_timeout: options.body_read_timeout, lift: lifts_arguments(&factory) };
    let service = StreamableHttpService::new(move || Ok(factory()), sessions, config);
    let router = Router::new()
        .route_service("/", service)
        .layer(axum::middleware::from_fn_with_state(adapter, adapt_post));
    let router = match options.authenticator {
        // Outside the adapter: a refused request is answered before its body is read.
        Some(authenticator) => {
            let gate = Gate { authenticator, resource: options.protected_resource, owners };
            router.layer(axum::middleware::from_fn_with_state(gate, auth::verify))
        }
        None => router,
    };
    // The outermost layer: a `Host` rmcp would misread is refused first.
    router.layer(axum::middleware::from_fn(host::check_host))
}

/// What [`adapt_post`] needs from the options.
#[derive(Clone, Copy)]
struct Adapter {
    body_read_timeout: Duration,
    /// Whether a `tools/call`'s arguments are parsed here and handed to the handler beside the
    /// frame ([`frame::lift_arguments`]): for pilotage's own handler only (see
    /// [`lifts_arguments`]).
    lift: bool,
}

/// Whether the handlers `factory` makes take a `tools/call`'s arguments from the request's
/// head ([`LiftedArguments`]): pilotage's own handler does, unless one of its tools binds an
/// argument to a header (rmcp checks such headers against the arguments in the frame); any
/// other handler reads only the frame.
fn lifts_arguments<S: ServerHandler, F: Fn() -> S>(factory: &F) -> bool {
    if std::any::TypeId::of::<S>() != std::any::TypeId::of::<PilotageHandler>() {
        return false;
    }
    let handler = factory();
    (&handler as &dyn std::any::Any)
        .downcast_ref::<PilotageHandler>()
        .is_some_and(|h| h.takes_lifted_arguments())
}

/// The interop adapter described in the module docs, plus the body read timeout and the
/// session-limit reply. rmcp parses an ordinary frame; this adapter only probes it
/// ([`frame::probe`]) and judges in full only a frame that rmcp could not read.
async fn adapt_post(State(adapter): State<Adapter>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let bytes = match read_body(&parts.headers, body, adapter.body_read_timeout).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let result_type = at_least_2026_07_28(&parts.headers);
    // An ordinary frame is only probed here (id, initialize) and parsed once, by rmcp (a
    // `tools/call`'s arguments, for pilotage's handler, by `lift_arguments`); any other frame
    // is judged in full at once.
    let mut for_rmcp = bytes.clone();
    let probe = match frame::probe(&bytes) {
        Some(probe) => {
            if let Some((rest, arguments)) = adapter.lift.then(|| frame::lift_arguments(&bytes)).flatten() {
                parts.extensions.insert(LiftedArguments::new(arguments));
                for_rmcp = Bytes::from(rest);
            }
            probe
        }
        None => match judged_here(frame::judge(&bytes, result_type)) {
            Ok(message) => frame::Probe {
                id: request_id(&message),
                initialize: is_initialize(&message),
                ping: matches!(&*message, JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::PingRequest(_))),
            },
            Err(response) => return *response,
        },
    };
    let opens_session = probe.initialize && !parts.headers.contains_key(SESSION_HEADER);
    let json_body = has_essence(&parts.headers, JSON_MIME);
    let plain_json = !accepts_event_stream(&parts.headers);
    if plain_json {
        let both = HeaderValue::from_static("application/json, text/event-stream");
        parts.headers.insert(header::ACCEPT, both);
    }
    let response = next.run(Request::from_parts(parts, Body::from(for_rmcp))).await;
    if json_body && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        // JSON rmcp could not read as a client message: judged in full now, as the stdio
        // transport judges it (the id echoed, a notification accepted and never answered).
        return judged_here(frame::judge(&bytes, result_type)).err().map(|r| *r).unwrap_or_else(|| {
            let message = "Invalid Request: not a JSON-RPC 2.0 message";
            let error =
                json!({"jsonrpc": "2.0", "id": probe.id, "error": {"code": -32600, "message": message}});
            json_response(StatusCode::BAD_REQUEST, &error)
        });
    }
    if probe.ping && result_type && response.status() == StatusCode::NOT_FOUND {
        // rmcp refuses `ping` from MCP 2026-07-28 peers as an unknown method (HTTP 404),
        // having checked the request's headers; it is answered here, as any revision's is.
        return ping_reply(probe.id);
    }
    if opens_session && response.status() == StatusCode::INTERNAL_SERVER_ERROR {
        return session_limit_reply(response, probe.id).await;
    }
    if plain_json && has_essence(response.headers(), SSE_MIME) {
        first_sse_response(response).await
    } else {
        response
    }
}

/// The empty result of a `ping` with id `id`, `resultType` included (MCP 2026-07-28).
fn ping_reply(id: Value) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete"}});
    json_response(StatusCode::OK, &body)
}

/// A frame judged in full: the message for rmcp, or the response given here instead.
fn judged_here(judged: Judged) -> Result<Box<ClientJsonRpcMessage>, Box<Response>> {
    match judged {
        Judged::Message(message) => Ok(message),
        Judged::Reply(reply) => Err(Box::new(judged_reply(&reply))),
        // A notification rmcp cannot read: accepted, and never answered (JSON-RPC 2.0 §4.1).
        Judged::Silent => Err(Box::new(StatusCode::ACCEPTED.into_response())),
    }
}

/// Whether the request says it speaks MCP 2026-07-28 or later (`MCP-Protocol-Version`).
fn at_least_2026_07_28(headers: &HeaderMap) -> bool {
    headers
        .get("mcp-protocol-version")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|version| version.trim() >= "2026-07-28")
}

/// The id of a request (`null` for any other message).
fn request_id(message: &ClientJsonRpcMessage) -> Value {
    match message {
        JsonRpcMessage::Request(request) => serde_json::to_value(&request.id).unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// Whether `message` is an `initialize` request.
fn is_initialize(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::InitializeRequest(_)))
}

/// The response for a frame answered without rmcp: HTTP 400 for an error, 200 for a result
/// (a `bounds_exceeded` tool result), as a plain JSON body either way.
fn judged_reply(reply: &Value) -> Response {
    let status = if reply.get("error").is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    json_response(status, reply)
}

/// rmcp answers an `initialize` it cannot open a session for with HTTP 500 and a text body;
/// when that text says the session cap was hit, the client gets HTTP 503 with a JSON-RPC
/// error instead. Other 500s pass through unchanged.
async fn session_limit_reply(response: Response, id: Value) -> Response {
    let (parts, body) = response.into_parts();
    let bytes = match Limited::new(body, 64 * 1024).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let text = String::from_utf8_lossy(&bytes);
    let Some(start) = text.find(sessions::LIMIT_REACHED) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let reason = text[start..].trim();
    let message = format!("Server busy: {reason}; close a session or retry later");
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": message}});
    let mut response = json_response(StatusCode::SERVICE_UNAVAILABLE, &body);
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

/// Whether `Accept` lists `text/event-stream` with a non-zero quality.
fn accepts_event_stream(headers: &HeaderMap) -> bool {
    let is_zero_quality = |parameter: &str| {
        parameter.split_once('=').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("q") && value.trim().parse::<f32>() == Ok(0.0)
        })
    };
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|entry| {
            let mut parameters = entry.split(';');
            let essence = parameters.next().unwrap_or_default().trim();
            essence.eq_ignore_ascii_case(SSE_MIME) && !parameters.any(is_zero_quality)
        })
}

/// Whether the `Content-Type` media type (ignoring parameters) is `mime`.
fn has_essence(headers: &HeaderMap, mime: &str) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(mime))
}

/// Turns an SSE response into a plain JSON one holding its first JSON-RPC
/// response or error; priming events, notifications and server requests are
/// skipped.
async fn first_sse_response(response: Response) -> Response {
    let (mut parts, mut body) = response.into_parts();
    let mut events = SseEvents::default();
    let message = loop {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(message) = frame.data_ref().and_then(|data| events.push(data)) {
                    break Some(message);
                }
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e, "MCP SSE stream failed before a response");
                break None;
            }
            None => break None,
        }
    };
    let Some(message) = message else {
        let message = "Internal error: the server sent no response".to_owned();
        return json_error(StatusCode::INTERNAL_SERVER_ERROR, -32603, message);
    };
    parts.status = StatusCode::OK;
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON_MIME));
    Response::from_parts(parts, Body::from(message))
}

/// Incremental SSE parser that yields the data of JSON-RPC responses/errors.
#[derive(Default)]
struct SseEvents {
    /// Bytes of the current, not yet terminated, line.
    line: Vec<u8>,
    /// The `data` of the current event, if any `data:` line was seen.
    data: Option<String>,
}

impl SseEvents {
    /// Feeds a chunk; returns the first completed event carrying a response. Whole lines are
    /// found by their end and taken as they are: a response of many kilobytes is copied once
    /// into its line and moved from there into its data, never byte by byte.
    fn push(&mut self, mut chunk: &[u8]) -> Option<String> {
        while let Some(end) = chunk.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&chunk[..end]);
            chunk = &chunk[end + 1..];
            let line = std::mem::take(&mut self.line);
            if let Some(data) = self.ended(line) {
                return Some(data);
            }
        }
        self.line.extend_from_slice(chunk);
        None
    }

    /// One line ended: a blank one ends the event (its data if it carries a response).
    fn ended(&mut self, mut line: Vec<u8>) -> Option<String> {
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.is_empty() {
            return self.data.take().filter(|data| is_jsonrpc_response(data));
        }
        if let Some(value) = line.strip_prefix(b"data:") {
            let skip = line.len() - value.len() + usize::from(value.first() == Some(&b' '));
            line.drain(..skip);
            let value = String::from_utf8(line)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(&value);
                }
                None => self.data = Some(value),
            }
        }
        // `id:`, `event:`, `retry:` and `:` comments do not matter here.
        None
    }
}

/// Whether `data` is a JSON-RPC response or error (not a request/notification).
/// Read with a probe that skips every value, so the response is not built into a tree.
fn is_jsonrpc_response(data: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Shape {
        #[serde(default)]
        method: Present,
        #[serde(default)]
        id: Present,
        #[serde(default)]
        result: Present,
        #[serde(default)]
        error: Present,
    }
    serde_json::from_str::<Shape>(data)
        .is_ok_and(|message| !message.method.0 && message.id.0 && (message.result.0 || message.error.0))
}

/// Whether a member is there, whatever its value (`null` included), read without keeping it.
#[derive(Default)]
struct Present(bool);

impl<'de> serde::Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer).map(|_| Present(true))
    }
}

#[cfg(test)]
mod tests;
