//! rmcp's client over a byte stream: a spawned child's stdin and stdout (the stdio transport),
//! or any reader and writer (an in-process server, a socket). Lines longer than
//! `HostLimits::max_response_bytes` are refused by rmcp's codec.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams,
    ProtocolVersion,
};
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{read_answer, read_tools, ChangedFlag, ToolAnswer, ToolInfo, SESSION_REVISION};
use crate::host::error::HostError;
use crate::host::limits::HostLimits;
use crate::model::manifest::EXTENSION_ID;

/// The Host's rmcp client handler: declares the Pilotage extension on `initialize` and raises
/// the rediscovery flag on `notifications/tools/list_changed`.
#[derive(Clone)]
pub(crate) struct HostClient {
    changed: ChangedFlag,
}

impl ClientHandler for HostClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        let mut extensions = std::collections::BTreeMap::new();
        extensions.insert(EXTENSION_ID.to_owned(), Map::new());
        capabilities.extensions = Some(extensions);
        let mut config =
            ClientConfig::new(capabilities, Implementation::new("pilotage-host", env!("CARGO_PKG_VERSION")));
        config.protocol_version = ProtocolVersion::V_2025_11_25;
        config
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.store(true, Ordering::Release);
    }
}

/// A running rmcp client, and the child process it talks to (killed when this is dropped).
pub(crate) struct StreamCarrier {
    service: RunningService<RoleClient, HostClient>,
    changed: ChangedFlag,
    _child: Option<tokio::process::Child>,
}

impl StreamCarrier {
    /// The handshake over `read`/`write`.
    pub async fn connect<R, W>(read: R, write: W, limits: &HostLimits) -> Result<StreamCarrier, HostError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let changed: ChangedFlag = Arc::new(AtomicBool::new(false));
        let transport =
            AsyncRwTransport::new_client(read, write).with_max_line_length(limits.max_response_bytes);
        let handler = HostClient { changed: changed.clone() };
        let service = handler
            .serve(transport)
            .await
            .map_err(|e| HostError::Transport(format!("the MCP handshake failed: {e}")))?;
        debug_assert_eq!(SESSION_REVISION, ProtocolVersion::V_2025_11_25.as_str());
        Ok(StreamCarrier { service, changed, _child: None })
    }

    /// Spawn `program` with `args` and speak MCP over its stdin and stdout. Its stderr is
    /// inherited; it is killed when the Host is dropped.
    pub async fn spawn(
        program: &str,
        args: &[String],
        limits: &HostLimits,
    ) -> Result<StreamCarrier, HostError> {
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| HostError::Transport(format!("spawning {program}: {e}")))?;
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(HostError::Transport(format!("{program}: no stdio pipes")));
        };
        let mut carrier = StreamCarrier::connect(stdout, stdin, limits).await?;
        carrier._child = Some(child);
        Ok(carrier)
    }

    pub async fn list_tools(&self, limits: &HostLimits) -> Result<Vec<ToolInfo>, HostError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        // One page per request; a server that never stops paging meets `max_tools` or the
        // request timeout.
        loop {
            let params = cursor.take().map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = self.service.peer().list_tools(params).await.map_err(service_error)?;
            let value = serde_json::to_value(&page).map_err(|e| HostError::Transport(e.to_string()))?;
            read_tools(&value, &mut tools, limits)?;
            match value.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() => cursor = Some(next.to_owned()),
                _ => return Ok(tools),
            }
        }
    }

    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolAnswer, HostError> {
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let result = self.service.peer().call_tool(params).await.map_err(service_error)?;
        let value = serde_json::to_value(&result).map_err(|e| HostError::Transport(e.to_string()))?;
        Ok(read_answer(&value))
    }

    pub fn accelerator(&self) -> Option<Value> {
        let info = self.service.peer_info()?;
        info.meta.as_ref()?.get(EXTENSION_ID).cloned()
    }

    pub fn instructions(&self) -> Option<String> {
        self.service.peer_info()?.instructions.clone()
    }

    pub fn changed(&self) -> &AtomicBool {
        &self.changed
    }
}

/// rmcp's error as the Host's: a JSON-RPC error response is a carrier error, the rest is the
/// transport's.
fn service_error(error: ServiceError) -> HostError {
    match error {
        ServiceError::McpError(e) => {
            HostError::Carrier { code: i64::from(e.code.0), message: e.message.into_owned() }
        }
        other => HostError::Transport(other.to_string()),
    }
}
