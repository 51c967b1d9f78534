//! The rmcp [`ServerHandler`]: it only routes. Every `tools/call` takes one path (in
//! `route`), or, for an execute that runs as a task, that path in the background (`tasks`):
//!
//! route (fixed tool, loop tool or plain tool; unknown: `-32602`) → structural check against the
//! tool's own advertised `inputSchema` (`-32602`) → the operation in `ops` (its
//! eligibility checks, the bounded engine call, the derivations) → the envelope
//! (`structuredContent`, one text summary, `isError` by channel).

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CustomRequest, CustomResult, ErrorCode,
    GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult,
    MetaObject, NotificationMetaObject, PaginatedRequestParams, ProgressNotificationParam, ServerConfig,
};
use rmcp::service::{MaybeSendFuture, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tracing::field::Empty;
use tracing::Instrument;

use super::Shared;
use crate::engine::{Caller, Tick};
use crate::model::manifest::EXTENSION_ID;
use crate::ops::watch::{TickOut, Watch};
use crate::ops::Reply;
use crate::state::session::Session;

/// The rmcp [`ServerHandler`] of one MCP session (or one stateless request).
#[derive(Clone)]
pub struct PilotageHandler {
    shared: Arc<Shared>,
    session: Arc<OnceLock<Arc<Session>>>,
}

impl PilotageHandler {
    pub(super) fn new(shared: Arc<Shared>, session: Arc<OnceLock<Arc<Session>>>) -> Self {
        PilotageHandler { shared, session }
    }

    /// Whether this handler may be given a `tools/call`'s arguments beside its frame
    /// ([`LiftedArguments`]): when none of its tools binds an argument to an HTTP header
    /// (`x-mcp-header`), which rmcp checks against the arguments in the frame it parses.
    #[cfg(feature = "http")]
    pub(crate) fn takes_lifted_arguments(&self) -> bool {
        fn binds_header(value: &serde_json::Value) -> bool {
            match value {
                serde_json::Value::Object(map) => {
                    map.contains_key("x-mcp-header") || map.values().any(binds_header)
                }
                serde_json::Value::Array(items) => items.iter().any(binds_header),
                _ => false,
            }
        }
        !self.shared.tools.iter().any(|t| t.tool.input_schema.values().any(binds_header))
    }

    /// The world of this request: its MCP session's; outside any session (stateless 2026-07-28
    /// requests), its verified caller's, else the shared anonymous one when the builder said
    /// so, else one of its own for this request alone. Over stdio, the ambient identity's.
    fn session(&self, context: &RequestContext<RoleServer>) -> Result<Arc<Session>, McpError> {
        let verified = verified(context);
        if let Some(s) = self.session.get() {
            if verified.as_ref().is_some_and(|c| c.id != s.caller.id) {
                return Err(McpError::invalid_request("this MCP session belongs to another caller", None));
            }
            return Ok(s.clone());
        }
        let identity = &self.shared.identity;
        Ok(match verified {
            Some(caller) => self.shared.stateless_session(caller),
            None if !is_http(context) => self.shared.stateless_session(Caller::new(AMBIENT)),
            None if identity.authenticator.is_some() => return Err(unverified()),
            None if identity.anonymous_sessionless => self.shared.stateless_session(Caller::new("anonymous")),
            None => self.shared.request_session(),
        })
    }

    /// Bytes of the state one `tools/call` carries: the future [`ServerHandler::call_tool`]
    /// boxes, made and dropped unpolled. For the test that keeps it small
    /// (`tests/it/request_futures.rs`); not part of the API.
    #[doc(hidden)]
    pub fn call_state_bytes(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> usize {
        std::mem::size_of_val(&self.call(request, context))
    }

    /// One `tools/call`: a task where the client asked for one, else the routed call under
    /// its span, logged once.
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let session = self.session(&context)?;
        let mut args = request.arguments.unwrap_or_default();
        if args.is_empty() {
            if let Some(lifted) = lifted(&context) {
                args = lifted;
            }
        }
        if super::tasks::wanted(&self.shared, &request.name, &args, &context) {
            let name = request.name.to_string();
            return Ok(match super::tasks::start(self.shared.clone(), session, name, args).await? {
                Ok(task) => CallToolResponse::Task(task),
                Err(refused) => refused.into(),
            });
        }
        let span =
            tracing::info_span!(target: "pilotage", "tools/call", tool = %request.name, language = Empty);
        let started = Instant::now();
        let watch = watch_of(&context);
        // Counted while served: a busy process's engine threads neither look nor poll.
        let _served = crate::ops::threads::Request::begin();
        let reply = super::route::call(&self.shared, &session, &request.name, args, &watch)
            .instrument(span.clone())
            .await;
        span.in_scope(|| log_call(&reply, started.elapsed()));
        Ok(super::route::envelope(reply?).into())
    }

    /// The caller an MCP session opened by `initialize` belongs to: the verified caller over
    /// HTTP with an authenticator, else a fresh anonymous `session-<uuid>`; over stdio the
    /// deployment's ambient identity (Part III §8.4). With it, whether the identity outlives the
    /// session (verified and ambient callers do; an anonymous session's does not).
    fn session_caller(&self, context: &RequestContext<RoleServer>) -> Result<(Caller, bool), McpError> {
        match verified(context) {
            Some(caller) => Ok((caller, true)),
            None if !is_http(context) => Ok((Caller::new(AMBIENT), true)),
            None if self.shared.identity.authenticator.is_some() => Err(unverified()),
            None => Ok((Caller::new(format!("session-{}", uuid::Uuid::new_v4().simple())), false)),
        }
    }
}

/// The identity of every stdio caller.
const AMBIENT: &str = "ambient";
/// How much of an unknown method name a `-32601` error echoes, in characters.
const MAX_ECHOED_METHOD: usize = 100;

/// Whether the request came over HTTP (rmcp hands the handler the HTTP request's head).
fn is_http(context: &RequestContext<RoleServer>) -> bool {
    context.extensions.get::<http::request::Parts>().is_some()
}

/// A `tools/call`'s arguments as the HTTP edge parsed them itself, rmcp having parsed the frame
/// with `{}` in their place (`transport::frame::lift_arguments`): rmcp's own parse buffers
/// every member of the arguments into serde's content tree and clones it, about as costly as
/// the work of a small call. Put in the request's head by the edge, taken once by the handler.
#[cfg(feature = "http")]
#[derive(Clone)]
pub(crate) struct LiftedArguments(Arc<std::sync::Mutex<Option<JsonObject>>>);

#[cfg(feature = "http")]
impl LiftedArguments {
    pub(crate) fn new(arguments: JsonObject) -> Self {
        LiftedArguments(Arc::new(std::sync::Mutex::new(Some(arguments))))
    }
}

/// The arguments the HTTP edge lifted out of this request's frame, if it did.
#[cfg(feature = "http")]
fn lifted(context: &RequestContext<RoleServer>) -> Option<JsonObject> {
    let lifted = context.extensions.get::<http::request::Parts>()?.extensions.get::<LiftedArguments>()?;
    lifted.0.lock().unwrap_or_else(|e| e.into_inner()).take()
}

#[cfg(not(feature = "http"))]
fn lifted(_: &RequestContext<RoleServer>) -> Option<JsonObject> {
    None
}

/// The caller the HTTP edge's authenticator verified for this request, if any.
fn verified(context: &RequestContext<RoleServer>) -> Option<Caller> {
    context.extensions.get::<http::request::Parts>()?.extensions.get::<Caller>().cloned()
}

/// The refusal of an unverified HTTP request on a server that verifies its callers (its router
/// was not built with the server's authenticator).
fn unverified() -> McpError {
    McpError::invalid_request(
        "this server verifies its callers, but the request reached it unverified: serve it with Server::router, serve_http or serve_listener",
        None,
    )
}

/// The request's watchers: its cancellation (`notifications/cancelled` cancels the request's
/// token) and, when the request carries a `progressToken`, progress notifications to it, each
/// naming the Run in `_meta` (so a client that cancels, and gets no answer, can fetch it).
fn watch_of(context: &RequestContext<RoleServer>) -> Watch {
    let progress = context.meta.get_progress_token().map(|token| {
        let peer = context.peer.clone();
        let out: TickOut = Arc::new(move |run_id: &str, tick: Tick| {
            let (peer, token) = (peer.clone(), token.clone());
            let mut meta = rmcp::model::JsonObject::new();
            meta.insert(EXTENSION_ID.to_owned(), serde_json::json!({"run_id": run_id}));
            let meta = NotificationMetaObject(MetaObject(meta));
            Box::pin(async move {
                let mut param = ProgressNotificationParam::new(token, tick.done as f64);
                param.total = tick.total.map(|t| t as f64);
                param.message = Some(tick.step);
                param.meta = Some(meta);
                if let Err(e) = peer.notify_progress(param).await {
                    tracing::debug!(error = %e, "a progress notification was not delivered");
                }
            })
        });
        out
    });
    Watch { cancel: Some(context.ct.clone()), progress, ..Watch::default() }
}

/// Our one event per `tools/call` (target `pilotage`, level info; inside the call's span, which
/// carries the tool and the Language): the run id where there is one, the duration and the
/// outcome (a run's status, `valid`/`invalid`, `ok`, `request_error:<kind>` or
/// `jsonrpc_error:<code>`).
fn log_call(reply: &Result<Reply, McpError>, took: Duration) {
    let duration_ms = took.as_micros() as f64 / 1e3;
    let reply = match reply {
        Ok(reply) => reply,
        Err(e) => {
            let outcome = format!("jsonrpc_error:{}", e.code.0);
            tracing::info!(target: "pilotage", duration_ms, outcome, "tools/call answered");
            return;
        }
    };
    let v = &reply.structured;
    let outcome = match (reply.is_error, v["outcome"]["status"].as_str(), v["valid"].as_bool()) {
        (true, _, _) => format!("request_error:{}", v["error"]["kind"].as_str().unwrap_or("unknown")),
        (false, Some(status), _) => status.to_owned(),
        (false, None, Some(valid)) => (if valid { "valid" } else { "invalid" }).to_owned(),
        (false, None, None) => "ok".to_owned(),
    };
    let run_id = v["run_id"].as_str();
    tracing::info!(target: "pilotage", run_id, duration_ms, outcome, "tools/call answered");
}

impl ServerHandler for PilotageHandler {
    fn get_info(&self) -> ServerConfig {
        self.shared.info.clone()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let (caller, stable) = self.session_caller(&context)?;
        let _ = self.session.get_or_init(|| self.shared.new_session(caller, stable));
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.shared.tools.iter().map(|t| t.tool.clone()).collect()))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.shared.tool(name).map(|t| t.tool.clone())
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, McpError>> + MaybeSendFuture + '_ {
        // Boxed: rmcp moves each request's future whole (into its task, into the task's cell,
        // out again as it completes), so the operations' state inline here would cost every
        // call its copies, more than a trivial call's own work (`tests/it/request_futures.rs`).
        Box::pin(self.call(request, context))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let session = self.session(&context)?;
        Box::pin(super::tasks::get(&self.shared, &session.caller.id, &request.task_id)).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let session = self.session(&context)?;
        Box::pin(super::tasks::cancel(&self.shared, &session.caller.id, &request.task_id)).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        if request.method == "tools/call" {
            return Err(McpError::invalid_params(
                "invalid tools/call params: `name` must be a string and `arguments` an object",
                None,
            ));
        }
        // The method is echoed cut short: a caller's megabyte name is not sent back whole.
        let mut method: String = request.method.chars().take(MAX_ECHOED_METHOD).collect();
        if method.len() < request.method.len() {
            method.push_str("...");
        }
        Err(McpError::new(ErrorCode::METHOD_NOT_FOUND, method, None))
    }
}
