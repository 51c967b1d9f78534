//! Plans (Part II §5.6) and the validate response (Part II §6.4).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::closed_sets::RiskLevel;
use super::diagnostic::Diagnostic;
use super::moved::{insert_before, written_with};
use super::risk::RiskHints;

/// The `{branch, label}` of a step inside a branch arm.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Arm {
    /// The branch step id.
    pub branch: String,
    /// The arm label (equal to the trace decision's `took`).
    pub label: String,
}

/// One plan step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanStep {
    /// Program step identifier.
    pub id: String,
    /// The invoked entry; absent for control flow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<String>,
    /// The enclosing arm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arm: Option<Arm>,
    /// The innermost enclosing loop.
    #[serde(rename = "loop", skip_serializing_if = "Option::is_none")]
    pub in_loop: Option<String>,
    /// Engine-defined risk of this use.
    pub risk: String,
    /// Its hints.
    pub risk_hints: RiskHints,
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) rank: usize,
}

impl PlanStep {
    /// A plan step with risk level `risk`.
    pub fn new<R: RiskLevel>(id: impl Into<String>, risk: R) -> Self {
        PlanStep::with(id.into(), risk.wire().to_owned(), risk)
    }

    /// A step of `id` whose risk's wire name `risk_name` is already written.
    fn with<R: RiskLevel>(id: String, risk_name: String, risk: R) -> Self {
        PlanStep {
            id,
            calls: None,
            arm: None,
            in_loop: None,
            risk: risk_name,
            risk_hints: risk.hints(),
            rank: risk.rank(),
        }
    }
    /// Makes this step what [`PlanStep::new`] makes, reusing its strings' memory.
    pub(crate) fn reset<R: RiskLevel>(&mut self, id: &str, risk: R) {
        let (mut new_id, mut risk_name) = (std::mem::take(&mut self.id), std::mem::take(&mut self.risk));
        new_id.clear();
        new_id.push_str(id);
        risk_name.clear();
        risk_name.push_str(risk.wire());
        *self = PlanStep::with(new_id, risk_name, risk);
    }

    /// The entry this step invokes.
    pub fn calls(&mut self, entry: impl Into<String>) -> &mut Self {
        self.calls = Some(entry.into());
        self
    }
    /// The arm that contains this step.
    pub fn arm(&mut self, branch: impl Into<String>, label: impl Into<String>) -> &mut Self {
        self.arm = Some(Arm { branch: branch.into(), label: label.into() });
        self
    }
    /// The innermost loop that contains this step.
    pub fn in_loop(&mut self, loop_id: impl Into<String>) -> &mut Self {
        self.in_loop = Some(loop_id.into());
        self
    }
}

/// The plan of a valid program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// Steps in expected execution order.
    pub steps: Vec<PlanStep>,
    /// The highest engine-defined risk among the steps.
    pub max_risk: String,
    /// AND/OR aggregate of the steps' hints.
    pub max_risk_hints: RiskHints,
}

/// The `validate` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ValidateResponse {
    /// No error-severity diagnostic.
    pub valid: bool,
    /// Every finding (always present).
    pub diagnostics: Vec<Diagnostic>,
    /// The snapshot validated against, for catalog-bearing Languages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog_version: Option<String>,
    /// The plan, when `plan` is declared and the program is valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// Referenced entries, when `catalog` is declared without `plan`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub references: Option<Vec<String>>,
}

impl PlanStep {
    /// This step as `serde_json::to_value` writes it, with its id and risk moved into place
    /// rather than copied (the crate-private `model::moved`).
    pub fn into_value(mut self) -> Value {
        let id = Value::String(std::mem::take(&mut self.id));
        let risk = Value::String(std::mem::take(&mut self.risk));
        written_with(&self, &mut [("id", Some(id)), ("risk", Some(risk))])
    }
}

impl Plan {
    /// This plan as `serde_json::to_value` writes it, its steps moved into place (see
    /// [`PlanStep::into_value`]).
    pub fn into_value(mut self) -> Value {
        let steps = std::mem::take(&mut self.steps);
        let steps = Value::Array(steps.into_iter().map(PlanStep::into_value).collect());
        written_with(&self, &mut [("steps", Some(steps))])
    }
}

impl ValidateResponse {
    /// This response as `serde_json::to_value` writes it, with its plan moved into place
    /// rather than copied (see [`Plan::into_value`]).
    pub fn into_value(mut self) -> Value {
        let plan = self.plan.take().map(Plan::into_value);
        let mut written = written_with(&self, &mut []);
        if let Some(plan) = plan {
            insert_before(&mut written, "plan", plan, &["references"]);
        }
        written
    }
}
