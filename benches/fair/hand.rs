//! The hand-written rmcp servers: one `ServerHandler` over a [`Work`] (the steps tools, or the
//! same SQL on rusqlite), written as an rmcp author writes it. It checks the arguments against
//! its advertised input schema (the same `jsonschema` check pilotage makes) and answers with
//! `structuredContent` and a short text. Two ways:
//!
//! - naive: the work runs inline on the async worker that received the request (a validator
//!   that never returns stalls that worker, and every session queued behind it);
//! - careful: the guarantee pilotage gives, as a careful author writes it: the work runs on
//!   `tokio::task::spawn_blocking` under a time bound (`tokio::time::timeout`), so the async
//!   workers stay free and a call past its bound is answered with an error.

use std::sync::Arc;
use std::time::Duration;

use pilotage::prelude::Json;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

/// The careful server's time bound per call (pilotage's default `validate_time`).
const TIME_BOUND: Duration = Duration::from_secs(2);

/// What a hand-written server's tools do, synchronously.
pub trait Work: Clone + Send + Sync + 'static {
    /// The input schema every tool advertises and checks.
    fn schema() -> Json;
    /// The advertised tools.
    fn tools() -> Vec<Tool>;
    /// One call: its structured result and short text.
    fn call(&self, name: &str, arguments: &Json) -> Result<(Json, &'static str), ErrorData>;
}

/// A hand-written server of `W`'s tools, naive or careful.
#[derive(Clone)]
pub struct Hand<W> {
    work: W,
    schema: Arc<jsonschema::Validator>,
    careful: bool,
}

impl<W: Work> Hand<W> {
    pub fn new(work: W, careful: bool) -> Self {
        let schema = Arc::new(jsonschema::validator_for(&W::schema()).expect("a valid schema"));
        Hand { work, schema, careful }
    }
}

/// A tool of `name` with `schema` as its input schema.
pub fn tool(name: &str, schema: &Json) -> Tool {
    let mut tool = Tool::default();
    tool.name = name.to_owned().into();
    tool.input_schema = Arc::new(schema.as_object().cloned().unwrap_or_default());
    tool
}

fn answer(structured: Json, text: &str) -> CallToolResponse {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(structured);
    r.into()
}

impl<W: Work> ServerHandler for Hand<W> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(W::tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Json::Object(request.arguments.unwrap_or_default());
        if let Some(fault) = self.schema.iter_errors(&arguments).next() {
            return Err(ErrorData::invalid_params(format!("Invalid arguments: {fault}"), None));
        }
        if !self.careful {
            let (structured, text) = self.work.call(&request.name, &arguments)?;
            return Ok(answer(structured, text));
        }
        let (work, name) = (self.work.clone(), request.name);
        let job = tokio::task::spawn_blocking(move || work.call(&name, &arguments));
        match tokio::time::timeout(TIME_BOUND, job).await {
            Ok(Ok(done)) => done.map(|(structured, text)| answer(structured, text)),
            Ok(Err(_)) => Err(ErrorData::internal_error("the tool failed", None)),
            Err(_) => Err(ErrorData::internal_error("the tool exceeded its time bound", None)),
        }
    }
}
