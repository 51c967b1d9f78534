//! Building and serving a Pilotage server.
//!
//! ```no_run
//! # use pilotage_runtime::{Server, language::Engine};
//! # fn engine() -> std::sync::Arc<dyn Engine> { unimplemented!() }
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // `Workflow::new` is any engine annotated with #[pilotage::language]: one instance per
//! // MCP session, so every session has its own world.
//! # let factory = || engine();
//! let server = Server::builder().name("my-server", "1.0.0").engine(factory).build()?;
//! server.serve_stdio().await?;
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ErrorCode, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult, MetaObject,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{json, Value};

use crate::capabilities::CapabilityDeclaration;
use crate::dispatch;
use crate::language::{Caller, Engine, LanguageSpec, Limits, Retention};
use crate::manifest::{LanguageEntry, Manifest, EXTENSION_ID, PILOTAGE_VERSION};
use crate::registry::{self, ToolEntry};
use crate::session::Session;
use crate::trace::RunStore;
use crate::transport::http::HttpOptions;

type Factory = Arc<dyn Fn() -> Arc<dyn Engine> + Send + Sync>;

/// One hosted Language.
pub(crate) struct LangInfo {
    pub spec: &'static LanguageSpec,
    pub effective: CapabilityDeclaration,
    pub limits: Limits,
    pub context_validator: Option<jsonschema::Validator>,
    factory: Factory,
}

/// Everything the handlers share; built once.
pub(crate) struct Shared {
    pub langs: Vec<LangInfo>,
    tools: Vec<ToolEntry>,
    index: HashMap<String, usize>,
    pub manifest: Arc<Value>,
    pub manifest_summary: String,
    info: ServerConfig,
    pub durable: Option<Arc<dyn RunStore>>,
    pub idempotency: crate::idempotency::Idempotency,
    stateless: std::sync::Mutex<HashMap<String, Arc<Session>>>,
}

impl Shared {
    pub fn tool(&self, name: &str) -> Option<&ToolEntry> {
        self.index.get(name).map(|i| &self.tools[*i])
    }
    fn new_session(&self, caller: Caller) -> Arc<Session> {
        let engines = self.langs.iter().map(|l| (l.factory)()).collect();
        Arc::new(Session::new(caller, engines, false))
    }
    /// The world of a principal without an MCP session (stateless 2026-07-28 requests): one
    /// per authorization identity, so an unauthorized name or run stays invisible.
    fn stateless_session(&self, principal: String) -> Arc<Session> {
        let mut map = self.stateless.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(principal.clone())
            .or_insert_with(|| {
                let engines = self.langs.iter().map(|l| (l.factory)()).collect();
                Arc::new(Session::new(Caller::new(principal), engines, true))
            })
            .clone()
    }
}

/// Why a server could not be built: every violation found, each naming the Language and rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    /// The violations.
    pub problems: Vec<String>,
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "the Pilotage server is inconsistent:")?;
        for p in &self.problems {
            writeln!(f, "  - {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for BuildError {}

/// Builds a [`Server`].
#[derive(Default)]
pub struct ServerBuilder {
    name: Option<(String, String)>,
    engines: Vec<(Factory, Option<Limits>)>,
    defaults: Option<CapabilityDeclaration>,
    durable: Option<Arc<dyn RunStore>>,
    stateless: bool,
}

impl ServerBuilder {
    /// The server's MCP implementation name and version.
    pub fn name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = Some((name.into(), version.into()));
        self
    }

    /// Host a Language: `factory` makes one engine per MCP session (each session its own world).
    pub fn language<E: Engine, F: Fn() -> E + Send + Sync + 'static>(self, factory: F) -> Self {
        self.engine(move || Arc::new(factory()) as Arc<dyn Engine>)
    }

    /// Host a Language from a factory of shared engines (e.g. one engine for every session).
    pub fn engine<F: Fn() -> Arc<dyn Engine> + Send + Sync + 'static>(mut self, factory: F) -> Self {
        self.engines.push((Arc::new(factory), None));
        self
    }

    /// Override the resource bounds of the Language added last.
    pub fn limits(mut self, limits: Limits) -> Self {
        if let Some(last) = self.engines.last_mut() {
            last.1 = Some(limits);
        }
        self
    }

    /// Server-level default capabilities (each Language's own declaration overrides them per
    /// capability; the manifest still carries every Language's effective map).
    pub fn default_capabilities(mut self, defaults: CapabilityDeclaration) -> Self {
        self.defaults = Some(defaults);
        self
    }

    /// The durable run store for Languages whose retention is an ISO 8601 duration.
    pub fn run_store(mut self, store: Arc<dyn RunStore>) -> Self {
        self.durable = Some(store);
        self
    }

    /// Declare a stateless (MCP 2026-07-28) deployment: `"session"` retention is then refused.
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.stateless = stateless;
        self
    }

    /// Check every rule that is not decided at compile time and build the server.
    pub fn build(self) -> Result<Server, BuildError> {
        let mut problems = Vec::new();
        let mut langs = Vec::new();
        for (factory, limits) in self.engines {
            let spec = factory().language_spec();
            let effective = CapabilityDeclaration::effective(self.defaults.as_ref(), &spec.capabilities);
            let context_validator = match &spec.context_schema {
                None => None,
                Some(s) => match jsonschema::validator_for(s) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        problems.push(format!(
                            "Language {}: context_schema is not a valid JSON Schema: {e}",
                            spec.name
                        ));
                        None
                    }
                },
            };
            langs.push(LangInfo {
                spec,
                effective,
                limits: limits.unwrap_or(spec.limits),
                context_validator,
                factory,
            });
        }
        if langs.is_empty() {
            problems.push("a Pilotage server needs at least one Language".to_owned());
        }
        let mut guide_ids: HashMap<&str, &str> = HashMap::new();
        for l in &langs {
            for g in &l.spec.guides {
                if let Some(other) = guide_ids.insert(g.id, l.spec.name) {
                    problems.push(format!(
                        "guide id `{}` is used by {other} and {}: guide ids are unique across the server (Part II §5.2); prefix them with the family",
                        g.id, l.spec.name
                    ));
                }
            }
        }
        let entries: Vec<LanguageEntry> =
            langs.iter().map(|l| LanguageEntry::of(l.spec, &l.effective)).collect();
        for (i, e) in entries.iter().enumerate() {
            problems.extend(e.violations());
            if entries[..i].iter().any(|o| o.name == e.name) {
                problems.push(format!("Language {} is hosted twice", e.name));
            }
            let retention = langs[i].spec.retention.as_ref();
            if self.stateless && retention == Some(&Retention::Session) {
                problems.push(format!(
                    "Language {}: a stateless deployment has no session; declare an ISO 8601 duration or \"none\" instead of retention \"session\"",
                    e.name
                ));
            }
            if matches!(retention, Some(Retention::Duration { .. }))
                && !self.durable.as_ref().is_some_and(|s| s.durable())
            {
                problems.push(format!(
                    "Language {}: retention {} promises durability across restarts; configure a durable run store with ServerBuilder::run_store",
                    e.name,
                    retention.map(Retention::as_str).unwrap_or_default()
                ));
            }
        }
        let tools = match registry::build(&langs) {
            Ok(t) => t,
            Err(e) => {
                problems.push(e);
                Vec::new()
            }
        };
        let mut index = HashMap::new();
        for (i, t) in tools.iter().enumerate() {
            if index.insert(t.tool.name.to_string(), i).is_some() {
                problems.push(format!(
                    "two tools are named `{}`: Languages sharing a loop tool need distinct program arguments (Part III §4.3), and plain tools need their own names",
                    t.tool.name
                ));
            }
        }
        if !problems.is_empty() {
            return Err(BuildError { problems });
        }
        let manifest = Manifest {
            pilotage: PILOTAGE_VERSION.to_owned(),
            languages: entries,
            capabilities: self.defaults,
        };
        let manifest = serde_json::to_value(&manifest).unwrap_or(Value::Null);
        let names: Vec<&str> = langs.iter().map(|l| l.spec.name).collect();
        let manifest_summary = format!("Pilotage manifest: {}", names.join(", "));
        let (name, version) =
            self.name.unwrap_or_else(|| ("pilotage-server".to_owned(), env!("CARGO_PKG_VERSION").to_owned()));
        let mut caps = ServerCapabilities::builder().enable_tools().build();
        let mut ext = JsonObject::new();
        ext.insert("version".into(), json!(PILOTAGE_VERSION));
        caps.extensions = Some([(EXTENSION_ID.to_owned(), ext)].into_iter().collect());
        let mut meta = JsonObject::new();
        meta.insert(EXTENSION_ID.to_owned(), json!({ "manifest": manifest }));
        let mut info = InitializeResult::new(caps)
            .with_server_info(Implementation::new(name, version))
            .with_instructions(format!(
                "This server speaks Pilotage ({EXTENSION_ID}): it hosts program Languages ({}). \
                 Call the `pilotage_manifest` tool first; then learn from `pilotage_get_guide`, look names up in the catalog, \
                 validate, execute and read the trace.",
                names.join(", ")
            ));
        info.meta = Some(MetaObject(meta));
        Ok(Server {
            shared: Arc::new(Shared {
                langs,
                tools,
                index,
                manifest: Arc::new(manifest),
                manifest_summary,
                info,
                durable: self.durable,
                idempotency: Default::default(),
                stateless: Default::default(),
            }),
        })
    }
}

/// A built Pilotage server: hand out [`Server::handler`]s or serve a transport directly.
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
}

impl Server {
    /// Start building.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// The manifest this server publishes.
    pub fn manifest(&self) -> &Value {
        &self.shared.manifest
    }

    /// A fresh rmcp handler: the MCP session it serves gets its own world at `initialize`.
    /// Requests that arrive without `initialize` (stateless MCP 2026-07-28) share one world.
    pub fn handler(&self) -> PilotageHandler {
        PilotageHandler { shared: self.shared.clone(), session: Arc::new(OnceLock::new()) }
    }

    /// Serve MCP over stdin/stdout until the client disconnects.
    pub async fn serve_stdio(&self) -> std::io::Result<()> {
        crate::transport::stdio::serve_stdio(self.handler()).await
    }

    /// Serve MCP over any byte stream pair (tests use `tokio::io::duplex`).
    pub async fn serve_lines<R, W>(&self, reader: R, writer: W) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        crate::transport::stdio::serve_lines(self.handler(), reader, writer).await
    }

    /// An axum router serving Streamable HTTP at its root; mount it with `nest_service`.
    pub fn router(&self, options: HttpOptions) -> axum::Router {
        let server = self.clone();
        crate::transport::http::mcp_service(move || server.handler(), options)
    }

    /// Serve Streamable HTTP at `http://addr/mcp` until ctrl-c.
    pub async fn serve_http(&self, addr: SocketAddr, options: HttpOptions) -> std::io::Result<()> {
        let server = self.clone();
        crate::transport::http::serve_http(move || server.handler(), addr, options).await
    }
}

/// The rmcp [`ServerHandler`] of one MCP session (or one stateless request).
#[derive(Clone)]
pub struct PilotageHandler {
    shared: Arc<Shared>,
    session: Arc<OnceLock<Arc<Session>>>,
}

/// Who is asking (Part III §8.4): over HTTP the connection's authorization context (the
/// `Authorization` credential), else `fallback`; over stdio the deployment's ambient identity.
fn principal(context: &RequestContext<RoleServer>, fallback: impl FnOnce() -> String) -> String {
    match context.extensions.get::<axum::http::request::Parts>() {
        None => "ambient".to_owned(),
        Some(parts) => parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .map(|v| crate::digest::token("principal-", v.as_bytes()))
            .unwrap_or_else(fallback),
    }
}

impl PilotageHandler {
    /// The session's world; for a request outside any session, its principal's.
    fn session(&self, context: &RequestContext<RoleServer>) -> Arc<Session> {
        if let Some(s) = self.session.get() {
            return s.clone();
        }
        self.shared.stateless_session(principal(context, || "anonymous".to_owned()))
    }
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
        let caller = principal(&context, || format!("session-{}", uuid::Uuid::new_v4().simple()));
        let _ = self.session.get_or_init(|| self.shared.new_session(Caller::new(caller)));
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
        let reply = dispatch::call(&self.shared, &session, &request.name, args).await?;
        Ok(reply.into_result().into())
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
