//! One client API over every transport the runner speaks: `tests/support`'s [`Conn`]
//! (Streamable HTTP, an example binary over stdio, in-process duplex) and [`Spawned`] (any
//! command line over stdio).

use std::sync::Arc;

use serde_json::{json, Value};

use super::spawn::Spawned;
use crate::support::{Conn, EXT, PROTOCOL};

/// A client connection. Every vector gets a fresh one (a fresh MCP session).
pub enum Client {
    Conn(Box<Conn>),
    Spawned(Box<Spawned>, u64),
}

/// Makes fresh connections to the server under test.
pub type Connector = Arc<dyn Fn() -> Client + Send + Sync>;

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
