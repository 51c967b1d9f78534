//! Traces (Part II §5.8) and the trace fetch response (Part II §6.6), with the level rendering
//! (summary omits inputs and truncates outputs).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::declaration::TraceLevel;
use super::outcome::Outcome;

/// Deserialize an optional "any" member so that a present `null` stays `Some(Value::Null)`:
/// absent and `null` are different facts in a trace.
pub(crate) fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// One control-flow decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    /// The branch or loop step.
    pub at: String,
    /// The arm label, or `continue`/`exit`.
    pub took: String,
    /// The evaluated reason.
    pub because: String,
}

/// One executed step, in flat execution order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TraceStep {
    /// Iteration- and expansion-qualified identifier.
    pub id: String,
    /// The invoked entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<String>,
    /// Step input (full level, non-control-flow steps).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub input: Option<Value>,
    /// Step output (full; truncated form at summary).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub output: Option<Value>,
    /// Step outcome.
    pub outcome: Outcome,
    /// Duration in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t_ms: Option<u64>,
    /// Decisions of a branch or loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decisions: Option<Vec<Decision>>,
}

impl TraceStep {
    /// Whether this is a control-flow entry (it carries decisions).
    pub fn is_control_flow(&self) -> bool {
        self.decisions.is_some()
    }
}

/// A trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trace {
    /// The Run.
    pub run_id: String,
    /// Effective level.
    pub level: TraceLevelWire,
    /// Flat execution log.
    pub steps: Vec<TraceStep>,
    /// Informative statistics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<Value>,
}

/// The wire form of [`TraceLevel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceLevelWire {
    /// `summary`
    Summary,
    /// `full`
    Full,
}

impl From<TraceLevel> for TraceLevelWire {
    fn from(l: TraceLevel) -> Self {
        match l {
            TraceLevel::Summary => TraceLevelWire::Summary,
            TraceLevel::Full => TraceLevelWire::Full,
        }
    }
}

/// Outputs whose JSON form exceeds this many bytes are truncated in summary traces.
pub const SUMMARY_OUTPUT_BYTES: usize = 256;

/// The documented summary truncation: an output whose JSON text is at most
/// [`SUMMARY_OUTPUT_BYTES`] bytes is kept as is; a longer one becomes
/// `{"truncated": true, "bytes": N, "preview": "<first 200 characters of its JSON text>"}`.
pub fn truncate_output(v: &Value) -> Value {
    let text = v.to_string();
    if text.len() <= SUMMARY_OUTPUT_BYTES {
        return v.clone();
    }
    let preview: String = text.chars().take(200).collect();
    serde_json::json!({"truncated": true, "bytes": text.len(), "preview": preview})
}

/// The steps as they appear at `level`: summary omits inputs and truncates outputs;
/// control-flow entries never carry input or output.
pub fn render_steps(steps: &[TraceStep], level: TraceLevel) -> Vec<TraceStep> {
    steps.iter().map(|s| render_step(s.clone(), level)).collect()
}

/// [`render_steps`] on steps the caller owns: nothing is copied.
pub fn render_steps_owned(steps: Vec<TraceStep>, level: TraceLevel) -> Vec<TraceStep> {
    steps.into_iter().map(|s| render_step(s, level)).collect()
}

fn render_step(mut s: TraceStep, level: TraceLevel) -> TraceStep {
    if s.is_control_flow() {
        s.input = None;
        s.output = None;
    } else if level == TraceLevel::Summary {
        s.input = None;
        s.output = s.output.as_ref().map(truncate_output);
    }
    s
}

/// The trace fetch response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TraceFetchResponse {
    /// The Run.
    pub run_id: String,
    /// Its outcome.
    pub outcome: Outcome,
    /// Output, where retained.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub output: Option<Value>,
    /// The trace at min(requested, recorded).
    pub trace: Trace,
    /// Optional prose (only with `trace_fetch.narrate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub narration: Option<String>,
}
