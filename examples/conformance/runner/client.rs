//! How the runner reaches the server under test. Every vector speaks through a
//! [`pilotage::host::Host`] (connection, discovery, every tool call); the raw JSON-RPC
//! [`Client`] below (`tests/support`'s [`Conn`], or [`Spawned`] for any command line) is kept
//! only for the one vector whose request is not a tool call at all: `PIL-CARRIER-MALFORMED-B`
//! sends a body that is not JSON-RPC, which no conformant client can be made to send.

use std::sync::Arc;

use futures::future::BoxFuture;
use pilotage::host::{Approval, Approver, GateRequest, Host, HostError};
use serde_json::{json, Value};

use super::spawn::Spawned;
use crate::support::{Conn, EXT, PROTOCOL};

/// A raw client connection (see the module docs: the malformed-message vector only).
pub enum Client {
    Conn(Box<Conn>),
    Spawned(Box<Spawned>, u64),
}

/// A fresh, discovered Host connection (a fresh MCP session, or a fresh stateless client)
/// whose approver is the given [`Grant`].
pub type HostConnector = Arc<dyn Fn(Grant) -> BoxFuture<'static, Result<Host, HostError>> + Send + Sync>;

/// A fresh raw connection.
pub type RawConnector = Arc<dyn Fn() -> Client + Send + Sync>;

/// Makes fresh connections to the server under test: through the Host (every vector), and raw
/// (the malformed-message vector).
#[derive(Clone)]
pub struct Connector {
    pub host: HostConnector,
    pub raw: RawConnector,
    /// Which transport, for messages.
    pub label: String,
    /// The approvals granted on this connector's Hosts.
    pub grants: Grant,
    /// Whether the server is reached statelessly (MCP 2026-07-28: no session, so the raw
    /// client sends its message without an `initialize` first).
    pub stateless: bool,
}

impl Connector {
    /// A connector from `host` (a Host builder run per connection) and `raw`.
    pub fn new(
        label: impl Into<String>,
        host: impl Fn(Grant) -> BoxFuture<'static, Result<Host, HostError>> + Send + Sync + 'static,
        raw: impl Fn() -> Client + Send + Sync + 'static,
    ) -> Connector {
        Connector {
            host: Arc::new(host),
            raw: Arc::new(raw),
            label: label.into(),
            grants: Grant::default(),
            stateless: false,
        }
    }

    /// The same, marked stateless.
    pub fn stateless(mut self) -> Connector {
        self.stateless = true;
        self
    }

    /// A fresh Host connection, approving through [`Connector::grants`].
    pub async fn host(&self) -> Result<Host, HostError> {
        (self.host)(self.grants.clone()).await
    }

    /// How many approvals its Hosts have granted so far.
    pub fn granted(&self) -> usize {
        self.grants.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The runner's approver: every vector's request is the test's own (its destructive plans
/// included), so the gate, which stays enforced on every execute request, is granted, and
/// each grant is counted.
#[derive(Clone, Debug, Default)]
pub struct Grant(pub Arc<std::sync::atomic::AtomicUsize>);

#[pilotage::host::async_trait]
impl Approver for Grant {
    async fn approve(&self, request: &GateRequest) -> Approval {
        debug_assert!(!request.reasons.is_empty() && !request.unverified_claims.is_empty());
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Approval::Granted
    }
}

impl From<Conn> for Client {
    fn from(c: Conn) -> Client {
        Client::Conn(Box::new(c))
    }
}

impl Client {
    /// A client for the command line `words`, spawned now.
    pub fn spawn(words: &[String]) -> Client {
        Client::Spawned(Box::new(Spawned::spawn(words)), 0)
    }

    /// Which transport, for messages.
    pub fn label(&self) -> String {
        match self {
            Client::Conn(c) => c.label.clone(),
            Client::Spawned(s, _) => s.label.clone(),
        }
    }

    /// The HTTP session id, when there is one.
    pub fn session_id(&self) -> Option<String> {
        match self {
            Client::Conn(c) => c.session_id().map(str::to_owned),
            Client::Spawned(..) => None,
        }
    }

    /// A JSON-RPC request (`params` omitted when `Null`); the whole response.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        match self {
            Client::Conn(c) => c.request(method, params).await,
            Client::Spawned(s, next) => {
                *next += 1;
                let mut message = json!({"jsonrpc": "2.0", "id": *next, "method": method});
                if !params.is_null() {
                    message["params"] = params;
                }
                s.send(&message.to_string()).await;
                s.receive(Some(&json!(*next))).await
            }
        }
    }

    /// A JSON-RPC notification.
    pub async fn notify(&mut self, method: &str, params: Value) {
        match self {
            Client::Conn(c) => c.notify(method, params).await,
            Client::Spawned(s, _) => {
                let mut message = json!({"jsonrpc": "2.0", "method": method});
                if !params.is_null() {
                    message["params"] = params;
                }
                s.send(&message.to_string()).await;
            }
        }
    }

    /// Send `body` as is; the response it draws.
    pub async fn raw(&mut self, body: &str) -> Value {
        match self {
            Client::Conn(c) => c.raw(body).await,
            Client::Spawned(s, _) => {
                s.send(body).await;
                s.receive(None).await
            }
        }
    }

    /// `initialize` (declaring the Pilotage extension iff `with_extension`) and
    /// `notifications/initialized`; the whole initialize response.
    pub async fn initialize(&mut self, with_extension: bool) -> Value {
        match self {
            Client::Conn(c) => c.initialize(with_extension).await,
            Client::Spawned(..) => {
                let capabilities = if with_extension { json!({"extensions": {EXT: {}}}) } else { json!({}) };
                let response = self
                    .request(
                        "initialize",
                        json!({
                            "protocolVersion": PROTOCOL,
                            "capabilities": capabilities,
                            "clientInfo": {"name": "pilotage-conformance", "version": "0"}
                        }),
                    )
                    .await;
                assert!(response.get("result").is_some(), "initialize failed: {response}");
                self.notify("notifications/initialized", Value::Null).await;
                response
            }
        }
    }
}
