//! Traces (Part II §5.8) and the trace fetch response (Part II §6.6), with the level rendering
//! (summary omits inputs and truncates outputs).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::declaration::TraceLevel;
use super::moved::written_with;
use super::outcome::Outcome;

/// Deserialize an optional "any" member so that a present `null` stays `Some(Value::Null)` (or
/// its text, `null`, for a kept record): absent and `null` are different facts in a trace.
pub(crate) fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
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
    /// This step as `serde_json::to_value` writes it, with its id, input and output moved into
    /// place rather than copied (the crate-private `model::moved`).
    pub fn into_value(mut self) -> Value {
        let id = std::mem::take(&mut self.id);
        // Null placeholders keep the members (and their order) that the moved values fill.
        let input = self.input.as_mut().map(std::mem::take);
        let output = self.output.as_mut().map(std::mem::take);
        written_with(&self, &mut [("id", Some(Value::String(id))), ("input", input), ("output", output)])
    }

    /// This step without its input and output, copied.
    fn clone_bare(&self) -> TraceStep {
        TraceStep {
            id: self.id.clone(),
            calls: self.calls.clone(),
            input: None,
            output: None,
            outcome: self.outcome.clone(),
            t_ms: self.t_ms,
            decisions: self.decisions.clone(),
        }
    }

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

impl Trace {
    /// This trace as `serde_json::to_value` writes it, its steps moved into place (see
    /// [`TraceStep::into_value`]).
    pub fn into_value(mut self) -> Value {
        let steps = std::mem::take(&mut self.steps);
        let steps = Value::Array(steps.into_iter().map(TraceStep::into_value).collect());
        written_with(&self, &mut [("steps", Some(steps))])
    }

    /// Takes this trace out as its value (see [`Trace::into_value`]), leaving an empty trace of
    /// the same level that keeps its member's place in a response.
    pub(crate) fn take_value(&mut self) -> Value {
        let placeholder = Trace { run_id: String::new(), level: self.level, steps: Vec::new(), stats: None };
        std::mem::replace(self, placeholder).into_value()
    }
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

/// A step as [`render_steps`] renders it at `level`, borrowed where rendering leaves it as it
/// is (a step that is not control flow, at `full`).
pub(crate) fn render_step_ref(s: &TraceStep, level: TraceLevel) -> std::borrow::Cow<'_, TraceStep> {
    if rendered_as_is(s, level) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(TraceStep { output: rendered_output(s), ..s.clone_bare() })
}

fn render_step(s: TraceStep, level: TraceLevel) -> TraceStep {
    if rendered_as_is(&s, level) {
        return s;
    }
    let output = rendered_output(&s);
    TraceStep { input: None, output, ..s }
}

/// Whether rendering at `level` leaves `s` as it is: a step that is not control flow, at `full`.
/// Any other step loses its input and keeps [`rendered_output`].
fn rendered_as_is(s: &TraceStep, level: TraceLevel) -> bool {
    !s.is_control_flow() && level != TraceLevel::Summary
}

/// The output a step that rendering changes keeps: none for control flow, the truncated form
/// otherwise (at `summary`).
fn rendered_output(s: &TraceStep) -> Option<Value> {
    if s.is_control_flow() {
        None
    } else {
        s.output.as_ref().map(truncate_output)
    }
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

impl TraceFetchResponse {
    /// This response as `serde_json::to_value` writes it, with its output and its trace moved
    /// into place rather than copied (see [`Trace::into_value`]).
    pub fn into_value(mut self) -> Value {
        let output = self.output.as_mut().map(std::mem::take);
        let trace = Some(self.trace.take_value());
        written_with(&self, &mut [("output", output), ("trace", trace)])
    }
}
