//! The carriers a Host speaks MCP over: rmcp's client over a byte stream (a spawned child's
//! stdio, or any reader and writer), and Streamable HTTP, sessionful or stateless (MCP
//! 2026-07-28, the client capabilities in every request's `_meta`). Each answers the two
//! requests the Host needs, `tools/list` and `tools/call`, bounded by [`HostLimits`].

mod http;
mod sse;
mod stream;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::error::HostError;
use super::limits::HostLimits;
use crate::model::manifest::EXTENSION_ID;

pub(crate) use self::http::HttpCarrier;
pub(crate) use self::stream::StreamCarrier;

/// The MCP revision a sessionful connection negotiates.
pub(crate) const SESSION_REVISION: &str = "2025-11-25";
/// The MCP revision without sessions.
pub(crate) const STATELESS_REVISION: &str = "2026-07-28";

/// The Host's extension capability map: the Pilotage extension, no settings (Part III §1.2).
pub(crate) fn extensions() -> Value {
    serde_json::json!({ EXTENSION_ID: {} })
}

/// One tool of `tools/list`, as the Host discovered it ([`Host::tools`](super::Host::tools)).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// Its `description`, server-authored prose (shown, never branched on).
    pub description: Option<String>,
    /// Its `inputSchema` (`{}` when the server sent none or not an object).
    pub input_schema: Value,
    /// Its `outputSchema`, when advertised.
    pub output_schema: Option<Value>,
    /// Its `annotations` object (behaviour hints: unverified server claims).
    pub annotations: Option<Value>,
    /// The tool's whole `_meta` object (the program declaration lives under the extension key).
    pub meta: Option<Value>,
}

/// A `tools/call` result, as much of it as the binding defines (Part III §6): `isError` and
/// `structuredContent`. `content` is never read. What [`Host::call_tool`](super::Host::call_tool)
/// answers; [`ToolAnswer::read`] and [`ToolAnswer::request_failure`] route it as Part III §7.1
/// says.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolAnswer {
    /// `isError` (absent or not a boolean reads as `false`).
    pub is_error: bool,
    /// `structuredContent`, as sent.
    pub structured: Option<Value>,
}

/// A connection to one server.
pub(crate) enum Carrier {
    Stream(StreamCarrier),
    Http(HttpCarrier),
}

impl Carrier {
    /// Every tool, all pages, at most `limits.max_tools`.
    pub async fn list_tools(&self, limits: &HostLimits) -> Result<Vec<ToolInfo>, HostError> {
        within(limits.request_timeout, "tools/list", async {
            match self {
                Carrier::Stream(c) => c.list_tools(limits).await,
                Carrier::Http(c) => c.list_tools(limits).await,
            }
        })
        .await
    }

    /// One `tools/call`, waiting at most `timeout`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> Result<ToolAnswer, HostError> {
        within(timeout, name, async {
            match self {
                Carrier::Stream(c) => c.call_tool(name, arguments).await,
                Carrier::Http(c) => c.call_tool(name, arguments).await,
            }
        })
        .await
    }

    /// The Pilotage `_meta` member of the initialize (or `server/discover`) result, if any.
    pub fn accelerator(&self) -> Option<Value> {
        match self {
            Carrier::Stream(c) => c.accelerator(),
            Carrier::Http(c) => c.accelerator(),
        }
    }

    /// The `instructions` of the initialize (or `server/discover`) result, if any.
    pub fn instructions(&self) -> Option<String> {
        match self {
            Carrier::Stream(c) => c.instructions(),
            Carrier::Http(c) => c.instructions(),
        }
    }

    /// Whether `notifications/tools/list_changed` arrived since the last call (and forget it).
    pub fn take_list_changed(&self) -> bool {
        let flag = match self {
            Carrier::Stream(c) => c.changed(),
            Carrier::Http(c) => c.changed(),
        };
        flag.swap(false, Ordering::AcqRel)
    }

    /// Whether notifications may not reach this connection: a stateless HTTP one (no session:
    /// only notifications inside an answer's event stream arrive), and a sessionful one while
    /// its standalone GET stream is not open. Over a byte stream every notification arrives.
    pub fn may_miss_notifications(&self) -> bool {
        match self {
            Carrier::Stream(_) => false,
            Carrier::Http(c) => c.may_miss_notifications(),
        }
    }
}

/// `future`, or [`HostError::Timeout`] after `limit`.
pub(crate) async fn within<T>(
    limit: Duration,
    what: &str,
    future: impl std::future::Future<Output = Result<T, HostError>>,
) -> Result<T, HostError> {
    match tokio::time::timeout(limit, future).await {
        Ok(result) => result,
        Err(_) => Err(HostError::Timeout { what: what.to_owned(), after: limit }),
    }
}

/// A `tools/list` result's tools, read leniently: a tool without a name is skipped, a tool
/// without an object `inputSchema` gets `{}` (a request built from it then names only what
/// its declaration names).
pub(crate) fn read_tools(
    result: &Value,
    out: &mut Vec<ToolInfo>,
    limits: &HostLimits,
) -> Result<(), HostError> {
    let tools = result.get("tools").and_then(Value::as_array).ok_or_else(|| HostError::Malformed {
        what: "tools/list".into(),
        reason: "no `tools` array".into(),
    })?;
    for tool in tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else { continue };
        if out.len() >= limits.max_tools {
            return Err(HostError::TooLarge { what: "tools/list".into(), limit: limits.max_tools });
        }
        let object = |member: &str| tool.get(member).filter(|v| v.is_object()).cloned();
        out.push(ToolInfo {
            name: name.to_owned(),
            description: tool.get("description").and_then(Value::as_str).map(str::to_owned),
            input_schema: object("inputSchema").unwrap_or(Value::Object(Map::new())),
            output_schema: object("outputSchema"),
            annotations: object("annotations"),
            meta: object("_meta"),
        });
    }
    Ok(())
}

/// A `tools/call` result read as the binding defines it.
pub(crate) fn read_answer(result: &Value) -> ToolAnswer {
    ToolAnswer {
        is_error: result.get("isError").and_then(Value::as_bool).unwrap_or(false),
        structured: result.get("structuredContent").cloned(),
    }
}

/// The shared flag a carrier raises on `notifications/tools/list_changed`.
pub(crate) type ChangedFlag = Arc<AtomicBool>;
