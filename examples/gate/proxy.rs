//! The passthrough: an MCP server to the host ([`Gate`]) and an MCP client to the real server
//! ([`Backward`]), each forwarding what the other side says, unchanged. In front of a server the
//! gate spawns, both speak over socket pairs to the fast path ([`crate::splice`]), which hands
//! them only what it does not settle itself; a Streamable HTTP server is reached through them
//! alone.
//!
//! The upstream connection is opened when the host initializes, with the host's own
//! `initialize` parameters (its capabilities and extension declarations), and the upstream's
//! `initialize` result goes back to the host as it came (capabilities, instructions, `_meta`
//! with an inline manifest), so the host sees the same server. Requests are re-sent under the
//! gate's own request ids and progress tokens: a progress notification coming back is put back
//! under the host's token, and a cancellation by the host cancels the upstream request.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientNotification, ClientRequest, ClientResult, DiscoverResult,
    ErrorData, GetMeta, Implementation, InitializeRequestParams, InitializeResult, ProgressToken,
    ProtocolVersion, RequestMetaObject, ServerNotification, ServerRequest, ServerResult,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestContext, RoleClient, RoleServer, RunningService,
    Service, ServiceError,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::evidence::Validations;
use crate::policy::{Audit, Policy};
use crate::rounds::Rounds;
use crate::surface::Surface;

/// Where the real server is.
#[derive(Debug)]
pub enum Upstream {
    /// A server the gate spawned, reached through the fast path's socket (see [`crate::splice`]):
    /// taken when the host initializes.
    Spliced(Mutex<Option<std::os::unix::net::UnixStream>>),
    /// A Streamable HTTP endpoint, with an optional bearer token.
    Http {
        /// The endpoint's URL.
        url: String,
        /// The bearer token sent with every request.
        bearer: Option<String>,
    },
}

/// The connected upstream: its peer and what keeps it running.
pub struct Connected {
    /// The client side of the upstream connection.
    pub peer: Peer<RoleClient>,
    /// The upstream's `initialize` result, as received.
    pub info: InitializeResult,
    _running: RunningService<RoleClient, Backward>,
}

/// How long the gate waits for the server to answer a call it makes itself (the tool list,
/// the manifest, a validation, a catalog lookup). The host's own requests are the host's to
/// bound and cancel.
pub const OWN_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// What both directions share.
pub struct Inner {
    upstream: Upstream,
    connected: OnceCell<Connected>,
    /// The host's `initialize` parameters, sent upstream as ours.
    host_params: OnceCell<InitializeRequestParams>,
    host: OnceCell<Peer<RoleServer>>,
    /// Upstream progress token -> the host's token, for requests in flight.
    progress: Mutex<HashMap<ProgressToken, ProgressToken>>,
    /// The upstream's Pilotage surface, learned on the first execute and after list changes.
    pub surface: tokio::sync::Mutex<Option<Arc<Surface>>>,
    /// Set when the server said its tool list changed, until the surface is learned again:
    /// the fast path does not use a surface that may be stale.
    pub surface_stale: AtomicBool,
    /// Validations the host's model ran, by exact program.
    pub validations: Validations,
    /// The approval questions open with a stateless host.
    pub rounds: Rounds,
    /// The pre-approvals of the policy file.
    pub policy: Policy,
    /// Where each gated call's audit line goes.
    pub audit: Audit,
    /// How long the person has to answer a question.
    pub ask_timeout: Duration,
}

/// The MCP server the host talks to.
#[derive(Clone)]
pub struct Gate(pub Arc<Inner>);

/// The MCP client the real server talks to.
#[derive(Clone)]
pub struct Backward(Arc<Inner>);

impl Gate {
    /// A gate in front of `upstream`, not yet connected.
    pub fn new(upstream: Upstream, policy: Policy, audit: Audit, ask_timeout: Duration) -> Gate {
        Gate(Arc::new(Inner {
            upstream,
            connected: OnceCell::new(),
            host_params: OnceCell::new(),
            host: OnceCell::new(),
            progress: Mutex::new(HashMap::new()),
            surface: tokio::sync::Mutex::new(None),
            surface_stale: AtomicBool::new(false),
            validations: Validations::default(),
            rounds: Rounds::default(),
            policy,
            audit,
            ask_timeout,
        }))
    }
}

impl Inner {
    /// The upstream peer (connected at `initialize`).
    pub fn upstream(&self) -> Result<&Connected, ErrorData> {
        self.connected.get().ok_or_else(|| ErrorData::internal_error("the gate is not initialized", None))
    }

    /// The host's peer.
    pub fn host(&self) -> Option<&Peer<RoleServer>> {
        self.host.get()
    }

    /// Connected upstream with `params` as the host's `initialize` parameters, unless already.
    async fn connected(self: &Arc<Self>, params: InitializeRequestParams) -> Result<&Connected, ErrorData> {
        let _ = self.host_params.set(params);
        self.connected
            .get_or_try_init(|| self.connect())
            .await
            .map_err(|e| ErrorData::internal_error(format!("gate: {e:#}"), None))
    }

    async fn connect(self: &Arc<Self>) -> anyhow::Result<Connected> {
        let backward = Backward(self.clone());
        match &self.upstream {
            Upstream::Spliced(socket) => {
                let socket = lock(socket).take().context("the server's socket was taken already")?;
                socket.set_nonblocking(true)?;
                let (read, write) = tokio::net::UnixStream::from_std(socket)?.into_split();
                let running = backward.serve((read, write)).await.context("initializing the server")?;
                Ok(Connected::new(running))
            }
            Upstream::Http { url, bearer } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = bearer {
                    config = config.auth_header(token.clone());
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                let running = backward.serve(transport).await.context("initializing the server")?;
                Ok(Connected::new(running))
            }
        }
    }

    /// Send `request` upstream on the host's behalf: its `_meta` as the host sent it (the
    /// progress token mapped), cancelled upstream when the host cancels it.
    pub async fn forward(
        &self,
        mut request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let peer = &self.upstream()?.peer;
        let host_token = context.meta.get_progress_token();
        let mut meta = context.meta;
        meta.0 .0.remove("progressToken");
        // The host's per-request lifecycle keys (stateless revision) describe the host's hop,
        // not the gate's session with the server.
        meta.0 .0.retain(|k, _| !k.starts_with(LIFECYCLE_KEYS));
        *request.get_meta_mut() = meta;
        let handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(carrier)?;
        let upstream_token = handle.progress_token.clone();
        if let Some(token) = host_token.clone() {
            lock(&self.progress).insert(upstream_token.clone(), token);
        }
        let answer = answer_or_cancel(handle, context.ct.cancelled(), "the host cancelled the request").await;
        if host_token.is_some() {
            lock(&self.progress).remove(&upstream_token);
        }
        answer.map_err(carrier)
    }

    /// Call an upstream tool for the gate itself (manifest, validate, catalog get), bounded by
    /// [`OWN_CALL_TIMEOUT`]: a server that does not answer the gate holds no execute forever.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<CallToolResult, ErrorData> {
        let params: CallToolRequestParams = serde_json::from_value(serde_json::json!({
            "name": name, "arguments": arguments,
        }))
        .map_err(|e| ErrorData::internal_error(format!("building a call of {name}: {e}"), None))?;
        let call = self.upstream()?.peer.call_tool(params);
        match tokio::time::timeout(OWN_CALL_TIMEOUT, call).await {
            Ok(answer) => answer.map_err(carrier),
            Err(_) => Err(ErrorData::internal_error(
                format!("gate: the server did not answer {name} within {} s", OWN_CALL_TIMEOUT.as_secs()),
                None,
            )),
        }
    }
}

impl Connected {
    fn new(running: RunningService<RoleClient, Backward>) -> Connected {
        let mut info = InitializeResult::new(Default::default());
        if let Some(peer) = running.peer_info() {
            info.protocol_version = peer.protocol_version.clone();
            info.capabilities = peer.capabilities.clone();
            if let Some(server) = &peer.server_info {
                info.server_info = server.clone();
            }
            info.instructions = peer.instructions.clone();
            info.meta = peer.meta.clone();
        }
        Connected { peer: running.peer().clone(), info, _running: running }
    }
}

/// The prefix of the per-request lifecycle keys of `_meta` (MCP 2026-07-28).
pub const LIFECYCLE_KEYS: &str = "io.modelcontextprotocol/";

/// Whether the request comes from a host on the stateless revision (MCP 2026-07-28: no
/// `initialize`, the lifecycle in every request's `_meta`).
pub fn stateless(meta: &RequestMetaObject) -> bool {
    meta.protocol_version().is_some_and(|v| !v.has_initialize())
}

/// The `initialize` parameters the gate sends the server for a stateless host: the host's
/// identity and capabilities from the request's `_meta`, on the newest handshake revision, less
/// the server-to-client requests (elicitation, sampling, roots) a stateless host cannot be sent.
fn stateless_params(meta: &RequestMetaObject) -> InitializeRequestParams {
    let mut capabilities = meta.client_capabilities().unwrap_or_default();
    capabilities.elicitation = None;
    capabilities.sampling = None;
    capabilities.roots = None;
    let info = meta.client_info().unwrap_or_else(|| Implementation::new("gate-host", "0"));
    InitializeRequestParams::new(capabilities, info)
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The answer to a forwarded request, or, when `cancelled` completes first, its cancellation
/// sent on to the peer that was asked.
async fn answer_or_cancel<R: rmcp::service::ServiceRole>(
    mut handle: rmcp::service::RequestHandle<R>,
    cancelled: impl std::future::Future<Output = ()>,
    reason: &str,
) -> Result<R::PeerResp, ServiceError> {
    tokio::select! {
        answer = &mut handle.rx => return answer.unwrap_or(Err(ServiceError::TransportClosed)),
        () = cancelled => {}
    }
    let _ = handle.cancel(Some(reason.to_owned())).await;
    Err(ServiceError::Cancelled { reason: Some(reason.to_owned()) })
}

/// A failure to get an answer from the other side, as the JSON-RPC error the caller receives:
/// the other side's own error as it was, anything else as an internal error.
fn carrier(e: ServiceError) -> ErrorData {
    match e {
        ServiceError::McpError(error) => error,
        other => ErrorData::internal_error(format!("the gate's peer did not answer: {other}"), None),
    }
}

impl Service<RoleServer> for Gate {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let inner = &self.0;
        match request {
            ClientRequest::InitializeRequest(init) => {
                let _ = inner.host.set(context.peer.clone());
                let connected = inner.connected(init.params.clone()).await?;
                Ok(ServerResult::InitializeResult(connected.info.clone()))
            }
            ClientRequest::PingRequest(_) => Ok(ServerResult::empty(())),
            // A stateless host discovers instead of initializing (its peer here cannot reach
            // it): the server's capabilities, instructions, identity and `_meta` (the inline
            // manifest), as the server's `initialize` result gave them.
            ClientRequest::DiscoverRequest(_) => {
                let connected = inner.connected(stateless_params(&context.meta)).await?;
                let info = &connected.info;
                let mut result =
                    DiscoverResult::new(vec![ProtocolVersion::V_2026_07_28], info.capabilities.clone());
                result.instructions = info.instructions.clone();
                result.meta = info.meta.clone();
                Ok(ServerResult::DiscoverResult(result.with_server_info(info.server_info.clone())))
            }
            // A stateless host's first request connects the gate (its lifecycle is in `_meta`).
            other => {
                if stateless(&context.meta) {
                    inner.connected(stateless_params(&context.meta)).await?;
                    let _ = inner.host.set(context.peer.clone());
                }
                match other {
                    ClientRequest::CallToolRequest(call) => crate::execute::call(inner, call, context).await,
                    other => inner.forward(other, context).await,
                }
            }
        }
    }

    async fn handle_notification(
        &self,
        mut notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match notification {
            // Cancellations are carried by the cancellation of each forwarded request;
            // `initialized` was sent upstream when the gate connected.
            ClientNotification::CancelledNotification(_) | ClientNotification::InitializedNotification(_) => {
                Ok(())
            }
            _ => {
                *notification.get_meta_mut() = context.meta;
                let peer = &self.0.upstream()?.peer;
                peer.send_notification(notification).await.map_err(carrier)
            }
        }
    }

    fn get_info(&self) -> InitializeResult {
        self.0.connected.get().map(|c| c.info.clone()).unwrap_or_default()
    }
}

impl Service<RoleClient> for Backward {
    async fn handle_request(
        &self,
        mut request: ServerRequest,
        context: RequestContext<RoleClient>,
    ) -> Result<ClientResult, ErrorData> {
        if let ServerRequest::PingRequest(_) = request {
            return Ok(ClientResult::empty(()));
        }
        let host = self.0.host().ok_or_else(|| ErrorData::internal_error("no host yet", None))?;
        let mut meta = context.meta;
        meta.0 .0.remove("progressToken");
        *request.get_meta_mut() = meta;
        let handle = host
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(carrier)?;
        answer_or_cancel(handle, context.ct.cancelled(), "the server cancelled the request")
            .await
            .map_err(carrier)
    }

    async fn handle_notification(
        &self,
        mut notification: ServerNotification,
        context: NotificationContext<RoleClient>,
    ) -> Result<(), ErrorData> {
        *notification.get_meta_mut() = context.meta;
        match &mut notification {
            ServerNotification::CancelledNotification(_) => return Ok(()),
            ServerNotification::ProgressNotification(progress) => {
                // Progress of a request the gate made for itself has no host token: dropped.
                let Some(token) = lock(&self.0.progress).get(&progress.params.progress_token).cloned() else {
                    return Ok(());
                };
                progress.params.progress_token = token;
            }
            ServerNotification::ToolListChangedNotification(_) => {
                *self.0.surface.lock().await = None;
            }
            _ => {}
        }
        match self.0.host() {
            Some(host) => host.send_notification(notification).await.map_err(carrier),
            None => Ok(()),
        }
    }

    fn get_info(&self) -> InitializeRequestParams {
        self.0.host_params.get().cloned().unwrap_or_default()
    }
}
