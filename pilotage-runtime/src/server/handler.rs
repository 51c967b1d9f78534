//! The rmcp [`ServerHandler`]: it only routes. Every `tools/call` takes one path:
//!
//! route (fixed tool, loop tool or plain tool; unknown: `-32602`) → structural check against the
//! tool's own advertised `inputSchema` (`-32602`) → the operation in `ops` (its
//! eligibility checks, the bounded engine call, the derivations) → the envelope
//! (`structuredContent`, one text summary, `isError` by channel).

use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest, CustomResult,
    ErrorCode, InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;

use super::tools::{Route, Stage};
use super::Shared;
use crate::engine::Caller;
use crate::model::digest;
use crate::model::errors::RequestError;
use crate::ops::{self, Args, Ctx, OpResult, Reply};
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

    /// The session's world; for a request outside any session, its principal's.
    fn session(&self, context: &RequestContext<RoleServer>) -> Arc<Session> {
        if let Some(s) = self.session.get() {
            return s.clone();
        }
        self.shared.stateless_session(principal(context, || "anonymous".to_owned()))
    }
}

/// Who is asking (Part III §8.4): over HTTP the connection's authorization context (the
/// `Authorization` credential), else `fallback`; over stdio the deployment's ambient identity.
fn principal(context: &RequestContext<RoleServer>, fallback: impl FnOnce() -> String) -> String {
    match context.extensions.get::<axum::http::request::Parts>() {
        None => "ambient".to_owned(),
        Some(parts) => parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .map(|v| digest::token("principal-", v.as_bytes()))
            .unwrap_or_else(fallback),
    }
}

/// Serve one `tools/call`. `Err` is the carrier channel.
async fn call(shared: &Shared, session: &Arc<Session>, name: &str, args: Args) -> Result<Reply, McpError> {
    let Some(entry) = shared.tool(name) else {
        return Err(McpError::invalid_params(format!("Unknown tool: {name}"), None));
    };
    let as_value = Value::Object(args);
    if let Some(fault) = entry.input.iter_errors(&as_value).next() {
        return Err(McpError::invalid_params(
            format!("Invalid arguments for tool {name}: {fault} (at '{}')", fault.instance_path()),
            None,
        ));
    }
    let Value::Object(args) = as_value else {
        return Err(McpError::invalid_params("arguments must be an object", None));
    };
    let ctx = |index: usize| Ctx {
        lang: &shared.langs[index],
        index,
        session,
        stores: &shared.stores,
        slots: &shared.slots,
    };
    let reply = match &entry.route {
        Route::Manifest => Reply::value(&*shared.manifest, shared.manifest_summary.clone()),
        Route::Guide => ops::learn::guide(&shared.langs, &args),
        Route::Catalog => match ops::by_name(&shared.langs, &args) {
            Ok((l, _)) => ops::lookup::lookup(ctx(l), &args).await,
            Err(e) => Reply::error(e),
        },
        Route::Loop(stage, langs) => match (select(shared, langs, &args), stage) {
            (Err(e), _) => Reply::error(e),
            (Ok(l), Stage::Validate) => {
                Reply::of(ops::validate::validate(ctx(l), &args).await, ops::validate::summary)
            }
            (Ok(l), Stage::Execute) => {
                Reply::of(ops::execute::execute(ctx(l), &args).await, ops::execute::summary)
            }
        },
        Route::Trace(l) => Reply::of(ops::trace_fetch::trace_fetch(ctx(*l), &args).await, |v| {
            format!("run {}: {}", v.run_id, v.outcome.status())
        }),
        Route::Promote(l) => ops::promote::promote(ctx(*l), &args).await,
        Route::Plain(l) => ops::plain::plain(ctx(*l), name, &args).await,
    };
    if cfg!(debug_assertions) && !matches!(entry.route, Route::Plain(_) | Route::Promote(_)) {
        if let Some(fault) = entry.output.iter_errors(&reply.structured).next() {
            tracing::error!(tool = name, %fault, "result does not match the advertised outputSchema");
            return Ok(Reply::error(RequestError::internal(format!(
                "result of {name} does not match its outputSchema: {fault}"
            ))));
        }
    }
    Ok(reply)
}

/// The Language a loop tool call is for: the tool's only Language, or, on a shared tool, the
/// one whose program argument is present (exactly one must be).
fn select(shared: &Shared, langs: &[usize], args: &Args) -> OpResult<usize> {
    if let [only] = langs {
        return Ok(*only);
    }
    let argument = |l: &usize| shared.langs[*l].spec.program_argument;
    let present: Vec<usize> = langs.iter().copied().filter(|l| args.contains_key(argument(l))).collect();
    match present.as_slice() {
        [one] => Ok(*one),
        _ => {
            let choices: Vec<String> =
                langs.iter().map(|l| format!("`{}` ({})", argument(l), shared.langs[*l].spec.name)).collect();
            Err(RequestError::invalid(format!(
                "this tool serves several Languages: supply exactly one program argument of {}",
                choices.join(", ")
            )))
        }
    }
}

/// The MCP envelope of a reply.
fn envelope(reply: Reply) -> CallToolResult {
    let mut r = if reply.is_error {
        CallToolResult::structured_error(reply.structured)
    } else {
        CallToolResult::structured(reply.structured)
    };
    r.content = vec![ContentBlock::text(reply.text)];
    r
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
        // An HTTP session without credentials is its own caller; stdio is the ambient identity.
        let mut anonymous = false;
        let caller = principal(&context, || {
            anonymous = true;
            format!("session-{}", uuid::Uuid::new_v4().simple())
        });
        let _ = self.session.get_or_init(|| self.shared.new_session(Caller::new(caller), !anonymous));
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

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let session = self.session(&context);
        let args = request.arguments.unwrap_or_default();
        let reply = call(&self.shared, &session, &request.name, args).await?;
        Ok(envelope(reply).into())
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
        Err(McpError::new(ErrorCode::METHOD_NOT_FOUND, request.method, None))
    }
}
