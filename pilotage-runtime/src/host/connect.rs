//! Connecting a [`Host`]: over stdio (a spawned command), any byte stream, or Streamable HTTP
//! (sessionful or stateless, with an optional bearer token); then discovery, and keeping the
//! discovered manifest fresh (Part III §3.3: after `tools/list_changed`, whether it comes on a
//! session's stream or inside the SSE answer to a request, stateless included; after
//! `not_found` for a name believed current, after `unknown_baseline` and after a
//! `catalog_drift` outcome; and, over HTTP without an open standalone GET stream, when older
//! than [`HostLimits::rediscover_after`]). A sessionful HTTP connection listens on the GET
//! stream; a stateless (2026-07-28) one has no session for one to belong to, so a notification
//! the server does not put in an answer's stream does not arrive, and the age bound and the
//! triggers above stand in for it.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncWrite};

use super::carrier::{within, Carrier, HttpCarrier, StreamCarrier, ToolAnswer};
use super::discover::{discover, Discovered};
use super::error::HostError;
use super::gate::{Approver, NoApprover};
use super::keys::KeyBook;
use super::limits::HostLimits;
use crate::model::errors::ErrorKind;
use crate::model::manifest::Manifest;

/// A connection to one Pilotage server, discovered, with the risk gate's [`Approver`].
///
/// ```no_run
/// # async fn demo() -> Result<(), pilotage_runtime::host::HostError> {
/// use pilotage_runtime::host::Host;
/// let host = Host::stdio("target/debug/examples/calc").connect().await?;
/// let calc = host.language("calc/v1")?;
/// let verdict = calc.validate(serde_json::json!({"op": "add", "args": [1, 2]})).await?;
/// assert!(verdict.valid());
/// # Ok(()) }
/// ```
pub struct Host {
    carrier: Carrier,
    limits: HostLimits,
    approver: Arc<dyn Approver>,
    found: Mutex<Arc<Discovered>>,
    stale: std::sync::atomic::AtomicBool,
    pub(crate) keys: Mutex<KeyBook>,
}

enum Target {
    Command(String, Vec<String>),
    Http { url: String, bearer: Option<String>, stateless: bool, reuse: bool },
}

/// How to connect: built by [`Host::stdio`], [`Host::command`] or [`Host::http`], finished by
/// [`Connect::connect`].
pub struct Connect {
    target: Target,
    limits: HostLimits,
    approver: Arc<dyn Approver>,
}

impl Connect {
    /// The bounds the server is held to (default [`HostLimits::default`]).
    pub fn limits(mut self, limits: HostLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Who grants the gate's approvals. Without one, every Run the gate holds is denied.
    pub fn approver(mut self, approver: impl Approver + 'static) -> Self {
        self.approver = Arc::new(approver);
        self
    }

    /// An `Authorization: Bearer` token for every HTTP request (ignored over stdio).
    pub fn bearer(mut self, token: impl Into<String>) -> Self {
        if let Target::Http { bearer, .. } = &mut self.target {
            *bearer = Some(token.into());
        }
        self
    }

    /// Speak the stateless revision (MCP 2026-07-28) over HTTP: no session; the client
    /// capabilities ride every request (ignored over stdio).
    pub fn stateless(mut self) -> Self {
        if let Target::Http { stateless, .. } = &mut self.target {
            *stateless = true;
        }
        self
    }

    /// Whether HTTP requests reuse a connection once its answer is read (ignored over stdio).
    ///
    /// By default each request gets a connection of its own, as with rmcp's client (the Host
    /// speaks plain HTTP only, no TLS): a handshake on loopback or a LAN costs about 0.1 ms,
    /// while a reused connection to a server that leaves Nagle's algorithm on (no `TCP_NODELAY`, as
    /// `axum::serve` does unless told) holds each answer's last write until this side's delayed
    /// ACK, up to 40 ms per request on Linux. Reuse a plain connection when the server sets
    /// `TCP_NODELAY` (pilotage's own HTTP edge does) and answers are many.
    ///
    /// ```
    /// use pilotage_runtime::host::Host;
    /// let connect = Host::http("http://127.0.0.1:8080/mcp").reuse_connections(true);
    /// # let _ = connect;
    /// ```
    pub fn reuse_connections(mut self, yes: bool) -> Self {
        if let Target::Http { reuse, .. } = &mut self.target {
            *reuse = yes;
        }
        self
    }

    /// Connect and discover, within [`HostLimits::connect_timeout`].
    pub async fn connect(self) -> Result<Host, HostError> {
        let limits = self.limits.clone();
        let carrier = within(limits.connect_timeout, "connecting", async {
            Ok(match &self.target {
                Target::Command(program, args) => {
                    Carrier::Stream(StreamCarrier::spawn(program, args, &limits).await?)
                }
                Target::Http { url, bearer, stateless, reuse } => Carrier::Http(
                    HttpCarrier::connect(url, bearer.as_deref(), *stateless, *reuse, &limits).await?,
                ),
            })
        })
        .await?;
        Host::discovered(carrier, limits, self.approver).await
    }
}

impl Host {
    /// Spawn `command_line` (a program and its arguments, split on whitespace) and speak MCP
    /// over its stdin and stdout.
    pub fn stdio(command_line: &str) -> Connect {
        let mut words = command_line.split_whitespace().map(str::to_owned);
        let program = words.next().unwrap_or_default();
        Host::command(program, words.collect())
    }

    /// Spawn `program` with `args` (no splitting) and speak MCP over its stdio.
    pub fn command(program: impl Into<String>, args: Vec<String>) -> Connect {
        Connect::new(Target::Command(program.into(), args))
    }

    /// Streamable HTTP at `url`.
    pub fn http(url: impl Into<String>) -> Connect {
        Connect::new(Target::Http { url: url.into(), bearer: None, stateless: false, reuse: false })
    }

    /// Speak MCP over `read` and `write` (an in-process server, a socket), with `approver`.
    pub async fn over<R, W>(
        read: R,
        write: W,
        limits: HostLimits,
        approver: impl Approver + 'static,
    ) -> Result<Host, HostError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let carrier = within(limits.connect_timeout, "connecting", async {
            Ok(Carrier::Stream(StreamCarrier::connect(read, write, &limits).await?))
        })
        .await?;
        Host::discovered(carrier, limits, Arc::new(approver)).await
    }

    async fn discovered(
        carrier: Carrier,
        limits: HostLimits,
        approver: Arc<dyn Approver>,
    ) -> Result<Host, HostError> {
        let found = within(limits.connect_timeout, "discovery", discover(&carrier, &limits, true)).await?;
        Ok(Host {
            carrier,
            limits,
            approver,
            found: Mutex::new(Arc::new(found)),
            stale: Default::default(),
            keys: Mutex::new(KeyBook::default()),
        })
    }

    /// The manifest as last discovered.
    pub fn manifest(&self) -> Manifest {
        self.snapshot().manifest.clone()
    }

    /// The Languages the manifest declares, by name.
    pub fn languages(&self) -> Vec<String> {
        self.snapshot().manifest.languages.iter().map(|l| l.name.clone()).collect()
    }

    /// The Pilotage member of the initialize (or, stateless, `server/discover`) result's
    /// `_meta` (the discovery accelerator, Part III §3.2), as the server sent it.
    pub fn accelerator(&self) -> Option<Value> {
        self.carrier.accelerator()
    }

    /// The `instructions` of the initialize (or `server/discover`) result: server-authored
    /// prose.
    pub fn instructions(&self) -> Option<String> {
        self.carrier.instructions()
    }

    /// The bounds this Host holds the server to.
    pub fn limits(&self) -> &HostLimits {
        &self.limits
    }

    /// Discover again now (from `pilotage_manifest`, the authoritative source).
    pub async fn rediscover(&self) -> Result<(), HostError> {
        let found = discover(&self.carrier, &self.limits, false).await?;
        *self.found.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(found);
        self.stale.store(false, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    pub(crate) fn approver(&self) -> &dyn Approver {
        self.approver.as_ref()
    }

    pub(crate) fn snapshot(&self) -> Arc<Discovered> {
        self.found.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The discovery to build the next request from, rediscovered first when it may be stale.
    pub(crate) async fn current(&self) -> Result<Arc<Discovered>, HostError> {
        let changed = self.carrier.take_list_changed();
        let stale = self.stale.load(std::sync::atomic::Ordering::Acquire);
        let old = self.carrier.may_miss_notifications()
            && self.snapshot().at.elapsed() >= self.limits.rediscover_after;
        if changed || stale || old {
            self.rediscover().await?;
        }
        Ok(self.snapshot())
    }

    /// One `tools/call`. The answers after which Part III §3.3 has a client without
    /// notifications rediscover mark the discovery stale, on every carrier (a notification
    /// may be lost, and a catalog change need not change the tool list): a `not_found` (a name
    /// believed current may not be), an `unknown_baseline`, and a `catalog_drift` outcome.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        timeout: std::time::Duration,
    ) -> Result<ToolAnswer, HostError> {
        let answer = self.carrier.call_tool(tool, arguments, timeout).await?;
        let stale = match &answer.structured {
            Some(s) if answer.is_error => super::error::RequestFailure::read(s)
                .is_some_and(|f| matches!(f.kind, ErrorKind::NotFound | ErrorKind::UnknownBaseline)),
            Some(s) => s["outcome"]["ok"] == false && s["outcome"]["status"] == "catalog_drift",
            None => false,
        };
        if stale {
            self.stale.store(true, std::sync::atomic::Ordering::Release);
        }
        Ok(answer)
    }
}

impl Connect {
    fn new(target: Target) -> Connect {
        Connect { target, limits: HostLimits::default(), approver: Arc::new(NoApprover) }
    }
}
