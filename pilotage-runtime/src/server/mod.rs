//! The server: the [`ServerBuilder`] that checks what only the assembled server can know, the
//! registry of tools (names, signpost descriptions, schemas), and the rmcp handler that routes
//! every `tools/call` to its operation in `ops`. The transports that serve it live in
//! [`crate::transport`].
//!
//! ```no_run
//! # use pilotage_runtime::{Server, engine::Engine};
//! # fn engine() -> std::sync::Arc<dyn Engine> { unimplemented!() }
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // `Workflow::new` is any engine annotated with #[pilotage::language]: one instance per
//! // MCP session, so every session has its own world.
//! # let factory = || engine();
//! let server = Server::builder().name("my-server", "1.0.0").engine(factory).build()?;
//! server.serve_stdio().await?;
//! # Ok(()) }
//! ```

mod builder;
mod handler;
pub(crate) mod identity;
mod route;
mod schemas;
mod tasks;
mod tools;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use rmcp::model::ServerConfig;
use serde_json::Value;

pub use self::builder::{BuildError, ServerBuilder};
#[cfg(feature = "http")]
pub(crate) use self::handler::LiftedArguments;
pub use self::handler::PilotageHandler;
use self::tools::ToolEntry;
use crate::engine::{Caller, Engine};
use crate::ops::Hosted;
use crate::state::session::{Session, StatelessSessions};
use crate::state::{MemoryState, SharedState, Stores};

/// Makes one engine instance (one per session, so each session has its own world).
type Factory = Arc<dyn Fn() -> Arc<dyn Engine> + Send + Sync>;

/// Everything the handlers share; built once.
pub(crate) struct Shared {
    langs: Vec<Hosted>,
    factories: Vec<Factory>,
    tools: Vec<ToolEntry>,
    index: HashMap<String, usize>,
    manifest: Arc<Value>,
    manifest_summary: String,
    info: ServerConfig,
    stores: Stores,
    stateless: StatelessSessions,
    /// Slots for concurrent engine calls, server-wide.
    slots: Arc<crate::ops::slots::Slots>,
    /// How callers are told apart.
    pub(crate) identity: identity::Identity,
}

impl Shared {
    fn tool(&self, name: &str) -> Option<&ToolEntry> {
        self.index.get(name).map(|i| &self.tools[*i])
    }

    fn engines(&self) -> Vec<Arc<dyn Engine>> {
        self.factories.iter().map(|f| f()).collect()
    }

    fn limits(&self) -> Vec<crate::engine::Limits> {
        self.langs.iter().map(|l| l.limits).collect()
    }

    /// The world of a new MCP session. A caller whose identity outlives the session (`stable`)
    /// keeps its promotions, served catalogs and keys in the deployment's store; one that lives
    /// only as long as the session keeps them in the session.
    fn new_session(&self, caller: Caller, stable: bool) -> Arc<Session> {
        let scope: Arc<dyn SharedState> =
            if stable { self.stores.state.clone() } else { Arc::new(MemoryState::default()) };
        Arc::new(Session::new(caller, self.engines(), false, &self.limits(), scope))
    }

    /// The world of a caller without an MCP session (stateless 2026-07-28 requests): one per
    /// caller, kept in the bounded table, so another caller's names and runs stay invisible.
    fn stateless_session(&self, caller: Caller) -> Arc<Session> {
        self.stateless.get_or_create(caller, || self.engines(), &self.limits(), &self.stores.state)
    }

    /// A world for one sessionless request alone (anonymous, without `anonymous_sessionless`):
    /// nothing it retains is reachable by any later request.
    fn request_session(&self) -> Arc<Session> {
        let caller = Caller::new(format!("request-{}", uuid::Uuid::new_v4().simple()));
        let scope: Arc<dyn SharedState> = Arc::new(MemoryState::default());
        Arc::new(Session::new(caller, self.engines(), true, &self.limits(), scope))
    }
}

/// A built Pilotage server: hand out [`Server::handler`]s or serve a transport directly (see
/// [`crate::transport`]).
///
/// Built with [`Server::builder`], from one factory per Language; `build` checks what only the
/// assembled server can know (tool names shared between engines, retention against the store)
/// before any request:
///
/// ```
/// # use pilotage::prelude::*;
/// # #[derive(Clone, Copy, pilotage::Codes)]
/// # enum CalcCode { UnknownOp }
/// # #[derive(Clone, Copy, pilotage::RiskLevels)]
/// # enum CalcRisk { #[risk(read_only)] Safe }
/// # struct Calc;
/// # #[pilotage::language(
/// #     name = "calc/v1", title = "Arithmetic programs", program = "calc", locator = "json-pointer",
/// #     capabilities(guides, validate, plan, execute), execution = "immediate", trace = "full",
/// #     retention = "none", guides = "../examples/calc/guides", codes = CalcCode, risk = CalcRisk,
/// # )]
/// # impl Calc {
/// #     #[loop_tool(validate, name = "validate_calc")]
/// #     fn validate(&self, program: &Json, v: &mut Validation<CalcCode, CalcRisk>) {
/// #         if program["op"] != "add" { v.error(CalcCode::UnknownOp, "/op", "only `add` exists"); }
/// #         v.step("sum", CalcRisk::Safe);
/// #     }
/// #     #[loop_tool(execute, name = "run_calc")]
/// #     async fn run(&self, program: &Json, run: &mut Run) -> Finish {
/// #         let sum: f64 = program["args"].as_array().into_iter().flatten().filter_map(Json::as_f64).sum();
/// #         run.step("sum").output(json!(sum)).succeeded();
/// #         Finish::output(json!({ "sum": sum }))
/// #     }
/// # }
/// let server = Server::builder().name("calc", "0.1.0").language(|| Calc).build()?;
/// assert_eq!(server.manifest()["languages"][0]["name"], "calc/v1");
/// // then: server.serve_stdio().await?, or (feature `http`)
/// // server.serve_http("127.0.0.1:8787".parse()?, HttpOptions::default()).await?
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
}

impl Server {
    /// Start building.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// How this server tells its callers apart (the transports read its authenticator).
    #[cfg(feature = "http")]
    pub(crate) fn identity(&self) -> &identity::Identity {
        &self.shared.identity
    }

    /// The manifest this server publishes.
    pub fn manifest(&self) -> &Value {
        &self.shared.manifest
    }

    /// A fresh rmcp handler: the MCP session it serves gets its own world at `initialize`.
    /// Requests that arrive without `initialize` (stateless MCP 2026-07-28) share one world per
    /// verified caller; without an authenticator each such request has a world of its own, or,
    /// with [`ServerBuilder::anonymous_sessionless`], they all share the anonymous one.
    pub fn handler(&self) -> PilotageHandler {
        PilotageHandler::new(self.shared.clone(), Arc::new(OnceLock::new()))
    }
}
