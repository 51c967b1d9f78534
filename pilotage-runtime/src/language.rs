//! One Language as the runtime sees it: its static declaration ([`LanguageSpec`]) and the
//! engine behind it ([`Engine`]).
//!
//! Engine authors do not implement [`Engine`] by hand: `#[pilotage::language(...)]` generates
//! it from the annotated `impl` block, after checking the declaration at compile time.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::capabilities::CapabilityDeclaration;
use crate::catalog::CatalogSnapshot;
use crate::closed_sets::ClosedSets;
use crate::execute::{ExecuteRequest, FinishCore, Recorder};
use crate::guides::GuideSource;
use crate::trace::TraceFetchResponse;
use crate::validate::{ValidateRequest, ValidationCore};

/// Who is asking. Every engine call receives it so visibility, hints and catalog tokens are
/// computed in the caller's scope (Part II §10.3). Over stdio it is the ambient identity; over
/// HTTP each MCP session is its own caller.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Caller {
    /// An opaque identity.
    pub id: Arc<str>,
}

impl Caller {
    /// A caller with identity `id`.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Caller { id: id.into() }
    }
}

/// The diagnostic locator dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocatorDialect {
    /// RFC 6901 pointers into a JSON program.
    JsonPointer,
    /// 1-based line/column ranges into a text program.
    TextRange,
}

impl LocatorDialect {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            LocatorDialect::JsonPointer => "json-pointer",
            LocatorDialect::TextRange => "text-range",
        }
    }
}

/// The execution mode of a Language that declares `execute`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutionMode {
    /// Evaluate during the request.
    Immediate,
    /// Install for later events.
    Deploy,
    /// Either, selected by the reserved `mode` argument.
    Both,
}

impl ExecutionMode {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionMode::Immediate => "immediate",
            ExecutionMode::Deploy => "deploy",
            ExecutionMode::Both => "both",
        }
    }
}

/// A trace level that a trace can have (`none` is only a request value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TraceLevel {
    /// Ids, outcomes, decisions, truncated outputs.
    Summary,
    /// Everything.
    Full,
}

impl TraceLevel {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceLevel::Summary => "summary",
            TraceLevel::Full => "full",
        }
    }
    /// Parse a wire name.
    pub fn parse(s: &str) -> Option<TraceLevel> {
        match s {
            "summary" => Some(TraceLevel::Summary),
            "full" => Some(TraceLevel::Full),
            _ => None,
        }
    }
}

/// How long started Runs stay fetchable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Retention {
    /// Not retained.
    None,
    /// For the MCP session.
    Session,
    /// For at least this ISO 8601 duration, across restarts.
    Duration {
        /// The declared text, e.g. `"PT1H"`.
        iso: &'static str,
        /// Its length.
        length: Duration,
    },
}

impl Retention {
    /// Wire value.
    pub fn as_str(&self) -> &'static str {
        match self {
            Retention::None => "none",
            Retention::Session => "session",
            Retention::Duration { iso, .. } => iso,
        }
    }
}

/// Sub-program trace behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceSubprogram {
    /// One entry per call.
    Opaque,
    /// Internal entries inserted with `call#n/` prefixes.
    Expanded,
}

/// Authority model of promoted programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromotionAuthority {
    /// The caller's authority.
    Caller,
    /// The promoter's retained authority.
    Promoter,
}

/// A loop tool's declaration: its name and the doc text added to its signpost description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolDecl {
    /// MCP tool name.
    pub name: &'static str,
    /// The method's doc comment, appended to the generated description.
    pub doc: &'static str,
}

/// The loop tools of a Language. `validate` always exists (capability floor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopTools {
    /// The validate tool.
    pub validate: ToolDecl,
    /// The execute tool, iff `execute` is declared.
    pub execute: Option<ToolDecl>,
    /// The trace-fetch tool, iff `trace_fetch` is declared.
    pub trace: Option<ToolDecl>,
}

/// An ordinary (non-Pilotage) MCP tool an engine also exposes, for example an admin tool that
/// changes the catalog. It gets no Pilotage semantics.
#[derive(Clone, Debug, PartialEq)]
pub struct PlainToolSpec {
    /// Tool name.
    pub name: &'static str,
    /// Description.
    pub description: &'static str,
    /// Input schema (an object schema).
    pub input_schema: Value,
    /// Whether the tool only reads.
    pub read_only: bool,
}

/// Resource bounds around every engine call (Part II §10.1).
///
/// Exceeded during validation: the `bounds_exceeded` request error. Exceeded during execution:
/// an `ok: false` outcome with status `partial` and the trace so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock bound of one validation.
    pub validate_time: Duration,
    /// Wall-clock bound of one execution.
    pub execute_time: Duration,
    /// Maximum steps one execution may record.
    pub max_steps: usize,
    /// Maximum size of a program, in bytes of its JSON (or text) form.
    pub max_program_bytes: usize,
    /// Maximum nesting depth of a JSON program (arrays and objects).
    pub max_depth: usize,
    /// Run each validation on the blocking pool, so the time bound holds even against a
    /// validator that never returns (default). `false` validates inline on the request's task,
    /// which saves a thread hand-off per request (see `benches/overhead.rs`) but bounds time
    /// only after the fact: choose it only for validators whose work is bounded by the program's
    /// size and depth, which the runtime checks first either way.
    pub isolate_validation: bool,
}

impl Default for Limits {
    /// 2 s to validate, 10 s to execute, 10 000 steps, 1 MiB programs, depth 64, isolated
    /// validation.
    fn default() -> Self {
        Limits {
            validate_time: Duration::from_secs(2),
            execute_time: Duration::from_secs(10),
            max_steps: 10_000,
            max_program_bytes: 1 << 20,
            max_depth: 64,
            isolate_validation: true,
        }
    }
}

/// Everything statically declared about one Language.
#[derive(Clone, Debug)]
pub struct LanguageSpec {
    /// `family/version`.
    pub name: &'static str,
    /// Human-readable title.
    pub title: &'static str,
    /// The program-bearing argument name of the loop tools.
    pub program_argument: &'static str,
    /// Locator dialect.
    pub locator: LocatorDialect,
    /// The Language-level capability declaration.
    pub capabilities: CapabilityDeclaration,
    /// Execution mode (iff `execute`).
    pub execution: Option<ExecutionMode>,
    /// Trace ceiling (iff `execute`).
    pub trace: Option<TraceLevel>,
    /// Retention (iff `execute`).
    pub retention: Option<Retention>,
    /// Sub-program trace behaviour, when declared.
    pub trace_subprogram: Option<TraceSubprogram>,
    /// Promotion authority, when declared.
    pub promotion_authority: Option<PromotionAuthority>,
    /// The context schema, iff the Language requires validation context.
    pub context_schema: Option<Value>,
    /// Loop tools.
    pub tools: LoopTools,
    /// The guides, embedded at compile time.
    pub guides: Vec<GuideSource>,
    /// The declared closed sets.
    pub sets: ClosedSets,
    /// Ordinary tools beside the loop.
    pub plain_tools: Vec<PlainToolSpec>,
    /// Resource bounds.
    pub limits: Limits,
}

/// The engine behind one Language, as the runtime calls it. Generated by
/// `#[pilotage::language]`; object safe so one server can host several engines.
pub trait Engine: Send + Sync + 'static {
    /// The static declaration.
    fn language_spec(&self) -> &'static LanguageSpec;

    /// The catalog snapshot visible to `caller`, iff the Language declares `catalog`.
    /// Engines should cache snapshots and rebuild them only when their world changes.
    fn catalog_snapshot(&self, caller: &Caller) -> Option<Arc<CatalogSnapshot>>;

    /// Validate one program. Must be side-effect free.
    fn validate_program(&self, request: &ValidateRequest) -> ValidationCore;

    /// Execute one program that has passed re-validation; the recorder collects the trace.
    fn execute_program<'a>(
        &'a self,
        request: &'a ExecuteRequest,
        recorder: Recorder,
    ) -> BoxFuture<'a, FinishCore>;

    /// Optional prose about a fetched run (`trace_fetch.narrate`), answering `question` when
    /// given. Narration is interpretation beside the facts, never instead of them.
    fn narrate(&self, run: &TraceFetchResponse, question: Option<&str>) -> Option<String> {
        let _ = (run, question);
        None
    }

    /// Call a plain tool by name; `None` when this engine has no such tool.
    fn call_plain_tool(
        &self,
        name: &str,
        arguments: &Value,
        caller: &Caller,
    ) -> Option<Result<Value, String>>;
}
