//! What the `host_*` tests share: an approver that records what it was asked, and the example
//! engines' programs.

use std::sync::{Arc, Mutex};

use pilotage::host::{Approval, Approver, Attempt, Execution, GateRequest};
use serde_json::{json, Value};

/// The Run an attempt made (a test fails on anything else).
pub fn ran(attempt: Attempt) -> pilotage::host::Ran {
    match attempt {
        Attempt::Executed(Execution::Ran(ran)) => ran,
        other => panic!("expected a Run, got {other:?}"),
    }
}

/// An approver that grants or denies everything and keeps every request it was asked.
#[derive(Clone, Default)]
pub struct Recording {
    grant: bool,
    asked: Arc<Mutex<Vec<GateRequest>>>,
}

impl Recording {
    /// One that denies.
    pub fn denying() -> Self {
        Recording::default()
    }
    /// One that grants.
    pub fn granting() -> Self {
        Recording { grant: true, ..Recording::default() }
    }
    /// The requests asked so far.
    pub fn asked(&self) -> Vec<GateRequest> {
        self.asked.lock().unwrap().clone()
    }
}

#[pilotage::host::async_trait]
impl Approver for Recording {
    async fn approve(&self, request: &GateRequest) -> Approval {
        self.asked.lock().unwrap().push(request.clone());
        if self.grant {
            Approval::Granted
        } else {
            Approval::Denied("denied by the test".into())
        }
    }
}

/// A workflow/v1 program calling `capability` with the input's user.
pub fn workflow_call(capability: &str) -> Value {
    json!({
        "inputs": {"userId": "string"},
        "steps": [{"id": "one", "kind": "call", "capability": capability, "with": {"user_id": "$.input.userId"}}],
        "output": {"result": "$.steps.one.output"}
    })
}

/// The input naming the example world's user 42.
pub fn user_42() -> Value {
    json!({"userId": "42"})
}

/// What a [`Wrapped`] server answers instead of its engine.
pub enum Reply {
    /// This `CallToolResult` (JSON).
    Result(Value),
    /// Never answer.
    Hang,
    /// Send `notifications/tools/list_changed`, then answer as the engine does.
    ListChanged,
}

/// Decides, per `tools/call` (tool name, arguments), whether to answer in the engine's place.
pub type Override = Arc<dyn Fn(&str, &Value) -> Option<Reply> + Send + Sync>;

/// A pilotage server's handler, with every `tools/call` counted by tool name, the initialize
/// result's `_meta` removed (so the Host discovers through `pilotage_manifest`), and the
/// answers `replace` chooses given instead of the engine's.
#[derive(Clone)]
pub struct Wrapped {
    pub inner: pilotage::server::PilotageHandler,
    pub calls: Arc<Mutex<Vec<(String, Value)>>>,
    /// The capabilities of every `initialize` request.
    pub inits: Arc<Mutex<Vec<Value>>>,
    pub replace: Override,
}

impl Wrapped {
    /// The workflow engine, wrapped.
    pub fn workflow(replace: Override) -> Wrapped {
        let server = pilotage::Server::builder().language(crate::workflow::Workflow::new).build().unwrap();
        Wrapped { inner: server.handler(), calls: Arc::default(), inits: Arc::default(), replace }
    }

    /// How many `tools/call` of `tool` arrived.
    pub fn count(&self, tool: &str) -> usize {
        self.calls.lock().unwrap().iter().filter(|(name, _)| name == tool).count()
    }

    /// The arguments of every `tools/call` of `tool`, in order.
    pub fn arguments(&self, tool: &str) -> Vec<Value> {
        self.calls.lock().unwrap().iter().filter(|(name, _)| name == tool).map(|(_, a)| a.clone()).collect()
    }

    /// Serve over Streamable HTTP on 127.0.0.1 (every session shares the counters); the
    /// endpoint URL and the task (abort it to stop).
    pub async fn serve(&self) -> (String, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let this = self.clone();
        let options = pilotage::transport::HttpOptions::default();
        let task = tokio::spawn(async move {
            let _ = pilotage::transport::serve_listener(
                move || this.clone(),
                listener,
                options,
                std::future::pending(),
            )
            .await;
        });
        (url, task)
    }

    /// Serve over a pair of in-process pipes with `serve_lines` (newline-delimited JSON-RPC);
    /// a Host over them.
    pub async fn host_over_pipes(&self) -> pilotage::host::Host {
        let (client_write, server_read) = tokio::io::duplex(1 << 20);
        let (server_write, client_read) = tokio::io::duplex(1 << 20);
        let this = self.clone();
        tokio::spawn(async move {
            let _ = pilotage::transport::serve_lines(this, server_read, server_write).await;
        });
        let limits = pilotage::host::HostLimits::default();
        pilotage::host::Host::over(client_read, client_write, limits, Recording::granting()).await.unwrap()
    }
}

impl rmcp::ServerHandler for Wrapped {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::ServerHandler::get_info(&self.inner)
    }

    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, rmcp::ErrorData> {
        self.inits.lock().unwrap().push(serde_json::to_value(&request.capabilities).unwrap());
        let mut result = self.inner.initialize(request, context).await?;
        result.meta = None;
        Ok(result)
    }

    async fn list_tools(
        &self,
        request: Option<rmcp::model::PaginatedRequestParams>,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        self.inner.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        self.calls.lock().unwrap().push((request.name.to_string(), arguments.clone()));
        match (self.replace)(&request.name, &arguments) {
            Some(Reply::Result(result)) => {
                let result: rmcp::model::CallToolResult = serde_json::from_value(result).unwrap();
                Ok(rmcp::model::CallToolResponse::Complete(result))
            }
            Some(Reply::Hang) => std::future::pending().await,
            Some(Reply::ListChanged) => {
                context.peer.notify_tool_list_changed().await.unwrap();
                self.inner.call_tool(request, context).await
            }
            None => self.inner.call_tool(request, context).await,
        }
    }
}

/// An override that replaces nothing.
pub fn none() -> Override {
    Arc::new(|_, _| None)
}
