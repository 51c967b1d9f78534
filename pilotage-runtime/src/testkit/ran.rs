//! [`Ran`]: one execute response as a test reads it, with the plan of the validation before it
//! and the plan–trace correspondence check.

use serde_json::Value;

use crate::model::correspondence;
use crate::model::diagnostic::Diagnostic;
use crate::model::execution::ExecuteResponse;
use crate::model::plan::Plan;
use crate::model::trace::TraceStep;

use super::findings::locator;

/// An execute response (a started or refused Run, never a request error) and the plan of the
/// validation that preceded it, when the program was supplied inline.
#[derive(Clone, Debug, PartialEq)]
pub struct Ran {
    /// The execute tool's `structuredContent`.
    pub response: ExecuteResponse,
    /// The plan the same program and context validated to.
    pub plan: Option<Plan>,
}

impl Ran {
    /// `response` with the `plan` it is checked against.
    pub fn new(response: ExecuteResponse, plan: Option<Plan>) -> Ran {
        Ran { response, plan }
    }

    /// The outcome's status (`success`, `validation_error`, an engine status, ...).
    pub fn status(&self) -> &str {
        self.response.outcome.status()
    }

    /// Whether the Run succeeded.
    pub fn ok(&self) -> bool {
        self.response.outcome.ok()
    }

    /// The run's output (only when ok).
    pub fn output(&self) -> Option<&Value> {
        self.response.output.as_ref()
    }

    /// The inline trace's entries (none for a refused Run or trace level `none`).
    pub fn steps(&self) -> &[TraceStep] {
        self.response.trace.as_ref().map_or(&[], |t| t.steps.as_slice())
    }

    /// The ids of the trace entries, in order.
    pub fn ids(&self) -> Vec<&str> {
        self.steps().iter().map(|s| s.id.as_str()).collect()
    }

    /// The trace entry `id`.
    ///
    /// # Panics
    /// When the trace has no such entry (the message lists those it has).
    pub fn step(&self, id: &str) -> &TraceStep {
        self.steps()
            .iter()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("no trace entry {id}: {:?}", self.ids()))
    }

    /// Where the `input_binding` findings of a refused Run point in its `input`, in order.
    pub fn input_binding(&self) -> Vec<String> {
        self.refused().iter().filter(|d| d.code == "input_binding").map(locator).collect()
    }

    /// The diagnostics of a refused Run (`validation_error`: the program or its `input`).
    pub fn refused(&self) -> &[Diagnostic] {
        self.response.diagnostics.as_deref().unwrap_or_default()
    }
}

/// Check a Run's inline trace against its plan (Part II §5.8.4): every entry maps to a plan
/// step and invokes the same entry, unselected arms are absent, and a successful run shows
/// every expected step. Nothing to check without a plan or a trace.
///
/// # Panics
/// On any violation, listing them all with the plan and the response.
pub fn check_correspondence(ran: &Ran) {
    let (Some(plan), Some(trace)) = (&ran.plan, &ran.response.trace) else {
        return;
    };
    if let Err(problems) = correspondence::check(plan, trace, ran.ok()) {
        panic!(
            "the trace does not correspond to the plan (Part II §5.8.4): {problems:#?}\nplan: {plan:#?}\nresponse: {:#?}",
            ran.response
        );
    }
}
