//! The manifest (Part II §5.1) and its consistency rules (Part II §4.3).
//!
//! The manifest is derived entirely from the declared Languages: each entry carries its
//! effective capability map (also when a server-level default exists, since many clients read
//! only the entry), the fixed access-tool references, and loop names that exist iff their
//! capability is declared.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::capabilities::{Capability, CapabilityDeclaration};

/// The Pilotage wire version.
pub const PILOTAGE_VERSION: &str = "1.1";
/// The extension identifier and `_meta` key.
pub const EXTENSION_ID: &str = "io.github.jafarsa0/pilotage";
/// The manifest tool.
pub const MANIFEST_TOOL: &str = "pilotage_manifest";
/// The guides tool.
pub const GUIDE_TOOL: &str = "pilotage_get_guide";
/// The catalog tool.
pub const CATALOG_TOOL: &str = "pilotage_catalog";

/// A Language's loop tool names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LoopObject {
    /// Validate tool.
    pub validate: String,
    /// Execute tool, iff `execute`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execute: Option<String>,
    /// Trace fetch tool, iff `trace_fetch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

/// One Language entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LanguageEntry {
    /// `family/version`.
    pub name: String,
    /// Title.
    pub title: String,
    /// Always `pilotage_get_guide`.
    pub guides: String,
    /// `pilotage_catalog` iff `catalog` is declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog: Option<String>,
    /// Loop tool names.
    #[serde(rename = "loop")]
    pub loop_tools: LoopObject,
    /// The effective capability map.
    pub capabilities: CapabilityDeclaration,
    /// Locator dialect.
    pub locator: String,
    /// Context schema, iff required.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_schema: Option<Value>,
    /// Execution mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<String>,
    /// Trace ceiling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// Sub-program trace behaviour.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_subprogram: Option<String>,
    /// Retention.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention: Option<String>,
    /// Promotion authority.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub promotion_authority: Option<String>,
    /// Beyond Pilotage 1.1, ignored by a 1.1 client (Part II §1.2): what the execute tool does
    /// for long runs, present iff the Language declares `tasks` (see [`LongRuns`]).
    #[serde(rename = "x-long-runs", default, skip_serializing_if = "Option::is_none")]
    pub long_runs: Option<LongRuns>,
    /// Beyond Pilotage 1.1, ignored by a 1.1 client: `"inline"` when the Language declares its
    /// validator cheap (`#[loop_tool(validate, inline)]`), so that validations run on the
    /// request's own task, bounded by the program's size and depth limits and cooperatively in
    /// time, instead of on an engine thread; absent when they are isolated (the default).
    #[serde(rename = "x-validation", default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<String>,
}

/// The `x-long-runs` member of a Language entry: the execute tool sends progress, honours
/// cancellation and runs as a task of the named MCP extension.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LongRuns {
    /// `notifications/progress` for a `tools/call` that carries a `progressToken`.
    pub progress: bool,
    /// `notifications/cancelled` (and `tasks/cancel`) stop the Run: it ends `partial`.
    pub cancellation: bool,
    /// The MCP extension a task-augmented `tools/call` of the execute tool follows
    /// (`io.modelcontextprotocol/tasks`).
    pub tasks: String,
}

/// The manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Manifest {
    /// `"1.1"`.
    pub pilotage: String,
    /// One entry per Language.
    pub languages: Vec<LanguageEntry>,
    /// Server-level defaults, when configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<CapabilityDeclaration>,
}

impl LanguageEntry {
    /// The Part II §4.3 violations of this entry (floor, requirements, trace and retention
    /// obligations, manifest consistency), as messages naming the Language.
    pub fn violations(&self) -> Vec<String> {
        let caps = &self.capabilities;
        let mut out: Vec<String> = caps.rule_violations();
        let exec = caps.declares(Capability::Execute);
        if exec && self.trace.is_none() {
            out.push("`execute` requires a trace ceiling (`summary` or `full`)".into());
        }
        if exec && (self.execution.is_none() || self.retention.is_none()) {
            out.push("`execute` requires `execution` and `retention`".into());
        }
        if caps.declares(Capability::TraceFetch) && self.retention.as_deref() == Some("none") {
            out.push("`trace_fetch` cannot be declared with retention \"none\"".into());
        }
        if exec != self.loop_tools.execute.is_some() {
            out.push("the `execute` loop tool must exist iff `execute` is declared".into());
        }
        if caps.declares(Capability::TraceFetch) != self.loop_tools.trace.is_some() {
            out.push("the `trace` loop tool must exist iff `trace_fetch` is declared".into());
        }
        out.into_iter().map(|m| format!("Language {}: {m}", self.name)).collect()
    }
}
