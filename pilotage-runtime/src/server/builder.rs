//! [`ServerBuilder`]: the hosted Languages, their bounds, the stores, and every rule that only
//! the assembled server can check (shared tool names, guide ids across Languages, retention
//! promises the deployment cannot keep), all reported at once in a [`BuildError`].

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{
    Implementation, InitializeResult, JsonObject, MetaObject, ServerCapabilities, ServerConfig,
};
use serde_json::{json, Value};

use super::identity::{Authenticator, Identity, ProtectedResource};
use super::tools::{self, ToolEntry};
use super::{Factory, Server, Shared};
use crate::engine::{Engine, Limits};
use crate::model::capabilities::CapabilityDeclaration;
use crate::model::check::SchemaCheck;
use crate::model::declaration::Retention;
use crate::model::manifest::{EXTENSION_ID, PILOTAGE_VERSION};
use crate::ops::slots::Slots;
use crate::ops::{learn, Hosted};
use crate::state::session::StatelessSessions;
use crate::state::SharedState;
use crate::state::Stores;

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

/// Builds a [`Server`]: each [`language`](ServerBuilder::language) adds an engine, and the
/// settings after it ([`limits`](ServerBuilder::limits)) apply to that engine; the others
/// (state, authenticator, statelessness, bounds) to the whole server. [`build`](ServerBuilder::build)
/// refuses an inconsistent server with every problem listed.
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
/// use std::time::Duration;
///
/// let server = Server::builder()
///     .name("calc", "0.1.0")
///     .language(|| Calc)
///     .limits(Limits { validate_time: Duration::from_millis(500), ..Limits::default() })
///     .max_engine_calls(8)
///     .build()?;
/// # let _ = server;
/// # Ok::<(), pilotage::BuildError>(())
/// ```
#[derive(Default)]
pub struct ServerBuilder {
    name: Option<(String, String)>,
    engines: Vec<(Factory, Option<Limits>)>,
    defaults: Option<CapabilityDeclaration>,
    state: Option<Arc<dyn SharedState>>,
    stateless: bool,
    max_engine_calls: Option<usize>,
    engine_share: Option<usize>,
    principals: Option<(usize, std::time::Duration)>,
    identity: Identity,
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

    /// Where the deployment keeps what outlives a request: run records of Languages whose
    /// retention is an ISO 8601 duration (which requires a durable store), and the idempotency
    /// keys, promoted programs and served catalogs of every caller whose identity outlives an
    /// MCP session. Default: [`MemoryState`](crate::state::MemoryState), in this process only.
    /// [`SqliteState`](crate::state::SqliteState) keeps it in one file for one process;
    /// `PostgresState` (feature `postgres`) shares it between replicas.
    pub fn state(mut self, store: Arc<dyn SharedState>) -> Self {
        self.state = Some(store);
        self
    }

    /// Declare a stateless (MCP 2026-07-28) deployment: `"session"` retention is then refused.
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.stateless = stateless;
        self
    }

    /// The most engine calls (validations, runs, catalog snapshots, plain tools) running at
    /// once, server-wide. Past it a call waits for a slot as long as its own time bound (a
    /// task: within its time to live), its clock starting only once it has one, and is then
    /// refused with `bounds_exceeded`, so a flood queues instead of starving the transport.
    /// Catalog look-ups also have a lane of their own (a quarter of `n`, at least 2), so runs
    /// never starve them. Default: four per available core, at least 4.
    pub fn max_engine_calls(mut self, n: usize) -> Self {
        self.max_engine_calls = Some(n.max(1));
        self
    }

    /// The most engine slots one caller holds at once (at least 1, at most
    /// [`max_engine_calls`](Self::max_engine_calls)): its further calls wait behind its own,
    /// and other callers keep the rest. Default: half of the slots, rounded up, so that no
    /// caller holds every slot of a server with two or more.
    pub fn max_engine_calls_per_caller(mut self, n: usize) -> Self {
        self.engine_share = Some(n.max(1));
        self
    }

    /// Bound the worlds of callers without an MCP session (stateless requests): at most `max`
    /// principals, each forgotten after `idle` without a request (least recently used first
    /// past the cap). Default: 1 024 principals, 10 minutes.
    pub fn principals(mut self, max: usize, idle: std::time::Duration) -> Self {
        self.principals = Some((max, idle));
        self
    }

    /// Verify every HTTP request with `authenticator`: each request's caller is the verified
    /// [`Caller`](crate::engine::Caller) (an MCP session keeps the caller of its `initialize` and
    /// refuses any other; a sessionless caller's requests share that caller's world), and a
    /// request it refuses gets HTTP 401 with a `WWW-Authenticate: Bearer` challenge.
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.identity.authenticator = Some(Arc::new(authenticator));
        self
    }

    /// The Protected Resource Metadata (RFC 9728) served at
    /// `/.well-known/oauth-protected-resource` and named in every `WWW-Authenticate` challenge.
    /// Without it the resource is `http://<Host>/mcp`, from each request's `Host` header.
    pub fn protected_resource(mut self, resource: ProtectedResource) -> Self {
        self.identity.resource = Some(resource);
        self
    }

    /// Without an authenticator, serve every sessionless HTTP request (MCP 2026-07-28, or a
    /// stateless deployment) as one shared anonymous caller, `anonymous`: its requests share one
    /// world, so every such caller sees every other's runs, promoted programs and catalog
    /// changes. Without this call, each sessionless request gets a world of its own for that
    /// request alone (caller `request-<uuid>`): nothing it stores is reachable later.
    pub fn anonymous_sessionless(mut self) -> Self {
        self.identity.anonymous_sessionless = true;
        self
    }

    /// Check every rule that is not decided at compile time and build the server.
    pub fn build(self) -> Result<Server, BuildError> {
        let mut problems = Vec::new();
        let (langs, factories) = self.hosted(&mut problems);
        if langs.is_empty() {
            problems.push("a Pilotage server needs at least one Language".to_owned());
        }
        problems.extend(guide_id_clashes(&langs));
        problems.extend(self.manifest_problems(&langs));
        let (tools, index) = registry(&langs, &mut problems);
        if self.stateless && self.identity.authenticator.is_none() && !self.identity.anonymous_sessionless {
            problems.push(STATELESS_WITHOUT_IDENTITY.to_owned());
        }
        if !problems.is_empty() {
            return Err(BuildError { problems });
        }
        let manifest = learn::manifest(&langs, self.defaults);
        let manifest = serde_json::to_value(&manifest).unwrap_or(Value::Null);
        let names: Vec<&str> = langs.iter().map(|l| l.spec.name).collect();
        let manifest_summary = format!("Pilotage manifest: {}", names.join(", "));
        let tasks = langs.iter().any(|l| l.spec.tasks);
        let info = initialize_result(self.name, &names, &manifest, tasks);
        let stores = self.state.map(|state| Stores { state, live: Default::default() }).unwrap_or_default();
        let shared = Shared {
            langs,
            factories,
            tools,
            index,
            manifest: Arc::new(manifest),
            manifest_summary,
            info,
            stores,
            stateless: {
                let (max, idle) = self.principals.unwrap_or((1_024, std::time::Duration::from_secs(600)));
                StatelessSessions::new(max, idle)
            },
            slots: {
                let max = self.max_engine_calls.unwrap_or_else(default_engine_calls);
                let share = self.engine_share.unwrap_or_else(|| Slots::default_share(max));
                Arc::new(Slots::new(max, share))
            },
            identity: self.identity,
        };
        Ok(Server { shared: Arc::new(shared) })
    }

    /// Each Language as hosted: effective capabilities, bounds, compiled context schema.
    fn hosted(&self, problems: &mut Vec<String>) -> (Vec<Hosted>, Vec<Factory>) {
        let mut langs = Vec::new();
        let mut factories = Vec::new();
        for (factory, limits) in &self.engines {
            let spec = factory().language_spec();
            let effective = CapabilityDeclaration::effective(self.defaults.as_ref(), &spec.capabilities);
            let context_validator = spec.context_schema.as_ref().and_then(|s| {
                SchemaCheck::new(s)
                    .map_err(|e| problems.push(format!("Language {}: its context_schema {e}", spec.name)))
                    .ok()
            });
            langs.push(Hosted { spec, effective, limits: limits.unwrap_or(spec.limits), context_validator });
            factories.push(factory.clone());
        }
        (langs, factories)
    }

    /// The manifest entries' own rules, duplicates, and retention promises this deployment
    /// cannot keep.
    fn manifest_problems(&self, langs: &[Hosted]) -> Vec<String> {
        let mut problems = Vec::new();
        let entries: Vec<_> = langs.iter().map(|l| learn::manifest_entry(l.spec, &l.effective)).collect();
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
                && !self.state.as_ref().is_some_and(|s| s.durable())
            {
                problems.push(format!(
                    "Language {}: retention {} promises durability across restarts; configure a durable store with ServerBuilder::state (SqliteState with the feature `sqlite`, or PostgresState with the feature `postgres` for several replicas)",
                    e.name,
                    retention.map(Retention::as_str).unwrap_or_default()
                ));
            }
        }
        problems
    }
}

/// The problem of a stateless deployment that cannot tell its callers apart.
const STATELESS_WITHOUT_IDENTITY: &str = "a stateless deployment has no MCP session to tell callers apart: verify each request's caller with ServerBuilder::authenticator, or call ServerBuilder::anonymous_sessionless() to serve every sessionless request as one shared anonymous caller who sees every other's runs";

/// Four engine calls per available core, at least 4.
fn default_engine_calls() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get() * 4).max(4)
}

/// Guide ids are unique across the server (Part II §5.2).
fn guide_id_clashes(langs: &[Hosted]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut guide_ids: HashMap<&str, &str> = HashMap::new();
    for l in langs {
        for g in &l.spec.guides {
            if let Some(other) = guide_ids.insert(g.id, l.spec.name) {
                problems.push(format!(
                    "guide id `{}` is used by {other} and {}: guide ids are unique across the server (Part II §5.2); prefix them with the family",
                    g.id, l.spec.name
                ));
            }
        }
    }
    problems
}

/// Every tool, indexed by name; two tools of one name are a problem.
fn registry(langs: &[Hosted], problems: &mut Vec<String>) -> (Vec<ToolEntry>, HashMap<String, usize>) {
    let tools = tools::build(langs).unwrap_or_else(|e| {
        problems.push(e);
        Vec::new()
    });
    let mut index = HashMap::new();
    for (i, t) in tools.iter().enumerate() {
        if index.insert(t.tool.name.to_string(), i).is_some() {
            problems.push(format!(
                "two tools are named `{}`: Languages sharing a loop tool need distinct program arguments (Part III §4.3), and plain tools need their own names",
                t.tool.name
            ));
        }
    }
    (tools, index)
}

/// The `initialize` result: tools, the Pilotage extension (and the MCP Tasks extension when a
/// Language declares `tasks`), the welcome text and the inline manifest in `_meta`.
fn initialize_result(
    name: Option<(String, String)>,
    names: &[&str],
    manifest: &Value,
    tasks: bool,
) -> ServerConfig {
    let (name, version) =
        name.unwrap_or_else(|| ("pilotage-server".to_owned(), env!("CARGO_PKG_VERSION").to_owned()));
    let mut caps = ServerCapabilities::builder().enable_tools().build();
    let mut ext = JsonObject::new();
    ext.insert("version".into(), json!(PILOTAGE_VERSION));
    let mut extensions: std::collections::BTreeMap<String, JsonObject> =
        [(EXTENSION_ID.to_owned(), ext)].into_iter().collect();
    if tasks {
        extensions.insert(rmcp::model::TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
    }
    caps.extensions = Some(extensions.into_iter().collect());
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
    info
}
