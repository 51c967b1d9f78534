//! A [`SessionManager`] that caps the number of live MCP sessions: rmcp's
//! [`LocalSessionManager`] plus one semaphore permit per live session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::auth::Owners;

/// The text every refusal carries; the HTTP adapter recognises refusals by it.
pub(crate) const LIMIT_REACHED: &str = "session limit reached";

/// [`LocalSessionManager`] with at most `max` live sessions. A session holds its slot from
/// `create_session` until `close_session`, which rmcp calls on HTTP DELETE and when the session
/// ends (idle expiry, shutdown).
pub(crate) struct CappedSessions {
    inner: LocalSessionManager,
    max: usize,
    slots: Arc<Semaphore>,
    held: Mutex<HashMap<SessionId, OwnedSemaphorePermit>>,
    /// The verified caller of each session (with an authenticator), forgotten on close.
    pub(crate) owners: Arc<Owners>,
}

impl CappedSessions {
    /// At most `max` live sessions, each closed after `idle` without traffic.
    pub(crate) fn new(max: usize, idle: Duration) -> CappedSessions {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        CappedSessions {
            inner,
            max,
            slots: Arc::new(Semaphore::new(max)),
            held: Mutex::default(),
            owners: Arc::default(),
        }
    }
}

/// Why a session operation failed.
#[derive(Debug)]
pub(crate) enum CappedError {
    /// `max` sessions are live already.
    LimitReached {
        max: usize,
    },
    Local(LocalSessionManagerError),
}

impl std::fmt::Display for CappedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CappedError::LimitReached { max } => write!(f, "{LIMIT_REACHED} ({max} live sessions)"),
            CappedError::Local(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CappedError {}

impl From<LocalSessionManagerError> for CappedError {
    fn from(e: LocalSessionManagerError) -> CappedError {
        CappedError::Local(e)
    }
}

type Transport = <LocalSessionManager as SessionManager>::Transport;

impl SessionManager for CappedSessions {
    type Error = CappedError;
    type Transport = Transport;

    async fn create_session(&self) -> Result<(SessionId, Transport), CappedError> {
        let slot = self
            .slots
            .clone()
            .try_acquire_owned()
            .map_err(|_| CappedError::LimitReached { max: self.max })?;
        let (id, transport) = self.inner.create_session().await?;
        self.held.lock().expect("session slots lock").insert(id.clone(), slot);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, CappedError> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, CappedError> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), CappedError> {
        let closed = self.inner.close_session(id).await;
        // The slot is freed even when closing failed: the session is out of the map either way.
        self.held.lock().expect("session slots lock").remove(id);
        self.owners.forget(id);
        Ok(closed?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, CappedError> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), CappedError> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, CappedError> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, CappedError> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}
