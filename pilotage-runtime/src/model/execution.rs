//! The execute response (Part II §6.5): the Run id, its outcome, the output (only when ok), a
//! refusal's diagnostics and the inline trace.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::diagnostic::Diagnostic;
use super::outcome::Outcome;
use super::trace::Trace;

/// The execute response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecuteResponse {
    /// Always present, refused Runs included.
    pub run_id: String,
    /// The outcome.
    pub outcome: Outcome,
    /// Engine-defined result, only when ok.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "super::trace::present")]
    pub output: Option<Value>,
    /// The refusal's diagnostics (status `validation_error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<Diagnostic>>,
    /// The inline trace of a started Run at effective level summary or full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
}

impl ExecuteResponse {
    /// This response as `serde_json::to_value` writes it, with its output and its trace moved
    /// into place rather than copied (see [`Trace::into_value`]).
    pub fn into_value(mut self) -> Value {
        let output = self.output.as_mut().map(std::mem::take);
        let trace = self.trace.take().map(Trace::into_value);
        let mut written = super::moved::written_with(&self, &mut [("output", output)]);
        if let Some(trace) = trace {
            super::moved::insert_before(&mut written, "trace", trace, &[]);
        }
        written
    }
}
