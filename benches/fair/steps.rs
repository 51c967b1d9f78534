//! The Language of numbered steps (`{"steps": [{"id", "op", "args"}]}`) as a pilotage engine,
//! twice (isolated validation, and `#[loop_tool(validate, inline)]`), and as the hand-written
//! servers' work: the validate tool checks every step's `op` and plans one step each, the
//! execute tool runs every step and returns the output with its full trace.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use pilotage::prelude::*;
use rmcp::model::Tool;
use rmcp::ErrorData;
use serde::Serialize;

use crate::hand::{tool, Work};

#[derive(Clone, Copy, pilotage::Codes)]
pub enum StepCode {
    UnknownOp,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
pub enum StepRisk {
    #[risk(read_only)]
    Safe,
}

fn steps(program: &Json) -> &[Json] {
    program["steps"].as_array().map(Vec::as_slice).unwrap_or_default()
}

fn sum(step: &Json) -> f64 {
    step["args"].as_array().into_iter().flatten().filter_map(Json::as_f64).sum()
}

/// What both engines' validators do.
fn judge(program: &Json, v: &mut Validation<StepCode, StepRisk>) {
    for (i, step) in steps(program).iter().enumerate() {
        let id = step["id"].as_str().unwrap_or("step");
        if !matches!(step["op"].as_str(), Some("add" | "mul")) {
            v.error(StepCode::UnknownOp, format!("/steps/{i}/op"), "only `add` and `mul` exist");
        }
        v.step(id, StepRisk::Safe);
    }
}

/// What both engines' runs do.
fn perform(program: &Json, run: &mut Run) -> Finish {
    let all = steps(program);
    for step in all {
        let id = step["id"].as_str().unwrap_or("step");
        run.step(id).input(step["args"].clone()).output(json!(sum(step))).succeeded();
    }
    Finish::output(json!({ "count": all.len() }))
}

/// The engine with default settings: its validator runs on an engine thread.
pub struct Steps;

#[pilotage::language(
    name = "steps/v1", title = "Numbered steps", program = "steps", locator = "json-pointer",
    capabilities(guides, validate, plan, execute), execution = "immediate", trace = "full",
    retention = "none", guides = "examples/calc/guides", codes = StepCode, risk = StepRisk,
)]
impl Steps {
    #[loop_tool(validate, name = "validate_steps")]
    fn validate(&self, program: &Json, v: &mut Validation<StepCode, StepRisk>) {
        judge(program, v);
    }

    #[loop_tool(execute, name = "run_steps", no_input)]
    async fn run(&self, program: &Json, run: &mut Run) -> Finish {
        perform(program, run)
    }
}

/// The same engine, its validator declared cheap: it runs on the request's own task.
pub struct StepsInline;

#[pilotage::language(
    name = "steps/v1", title = "Numbered steps", program = "steps", locator = "json-pointer",
    capabilities(guides, validate, plan, execute), execution = "immediate", trace = "full",
    retention = "none", guides = "examples/calc/guides", codes = StepCode, risk = StepRisk,
)]
impl StepsInline {
    #[loop_tool(validate, name = "validate_steps", inline)]
    fn validate(&self, program: &Json, v: &mut Validation<StepCode, StepRisk>) {
        judge(program, v);
    }

    #[loop_tool(execute, name = "run_steps", no_input)]
    async fn run(&self, program: &Json, run: &mut Run) -> Finish {
        perform(program, run)
    }
}

// ---- the hand-written servers' work ----------------------------------------------------------

#[derive(Serialize)]
struct Hints {
    #[serde(rename = "readOnly")]
    read_only: bool,
    destructive: bool,
    #[serde(rename = "openWorld")]
    open_world: bool,
}

const SAFE: Hints = Hints { read_only: true, destructive: false, open_world: false };

#[derive(Serialize)]
struct Diagnostic {
    severity: &'static str,
    code: &'static str,
    path: String,
    message: &'static str,
}

#[derive(Serialize)]
struct PlanStep<'a> {
    id: &'a str,
    risk: &'static str,
    risk_hints: &'static Hints,
}

#[derive(Serialize)]
struct Plan<'a> {
    steps: Vec<PlanStep<'a>>,
    max_risk: &'static str,
    max_risk_hints: &'static Hints,
}

#[derive(Serialize)]
struct Validated<'a> {
    valid: bool,
    diagnostics: Vec<Diagnostic>,
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<Plan<'a>>,
}

/// An outcome as the specification writes it.
#[derive(Serialize)]
struct Outcome {
    ok: bool,
    status: &'static str,
    error: Option<String>,
}

const SUCCESS: Outcome = Outcome { ok: true, status: "success", error: None };

#[derive(Serialize)]
struct TraceStep<'a> {
    id: &'a str,
    input: &'a Json,
    output: f64,
    outcome: &'static Outcome,
    t_ms: u64,
}

#[derive(Serialize)]
struct Trace<'a> {
    run_id: &'a str,
    level: &'static str,
    steps: Vec<TraceStep<'a>>,
}

#[derive(Serialize)]
struct Executed<'a> {
    run_id: &'a str,
    outcome: &'static Outcome,
    output: Json,
    trace: Trace<'a>,
}

/// The two tools written directly: typed serde structs, the same rules.
#[derive(Clone, Default)]
pub struct StepsWork {
    runs: Arc<AtomicU64>,
}

impl StepsWork {
    fn validate(program: &Json) -> Validated<'_> {
        let mut diagnostics = Vec::new();
        let mut plan = Vec::new();
        for (i, step) in steps(program).iter().enumerate() {
            if !matches!(step["op"].as_str(), Some("add" | "mul")) {
                let path = format!("/steps/{i}/op");
                let message = "only `add` and `mul` exist";
                diagnostics.push(Diagnostic { severity: "error", code: "unknown_op", path, message });
            }
            let id = step["id"].as_str().unwrap_or("step");
            plan.push(PlanStep { id, risk: "safe", risk_hints: &SAFE });
        }
        let valid = diagnostics.is_empty();
        let plan = valid.then_some(Plan { steps: plan, max_risk: "safe", max_risk_hints: &SAFE });
        Validated { valid, diagnostics, plan }
    }

    fn execute(&self, program: &Json) -> Result<Json, Json> {
        let verdict = Self::validate(program);
        if !verdict.valid {
            return Err(serde_json::to_value(&verdict).unwrap_or_default());
        }
        let run_id = format!("run_{:016x}", self.runs.fetch_add(1, Ordering::Relaxed));
        let all = steps(program);
        let steps = all
            .iter()
            .map(|s| {
                let started = Instant::now();
                let output = sum(s);
                let t_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                TraceStep {
                    id: s["id"].as_str().unwrap_or("step"),
                    input: &s["args"],
                    output,
                    outcome: &SUCCESS,
                    t_ms,
                }
            })
            .collect();
        let executed = Executed {
            run_id: &run_id,
            outcome: &SUCCESS,
            output: json!({"count": all.len()}),
            trace: Trace { run_id: &run_id, level: "full", steps },
        };
        Ok(serde_json::to_value(&executed).unwrap_or_default())
    }
}

fn schema() -> Json {
    json!({"type": "object", "properties": {"steps": {"type": "object"}}, "required": ["steps"]})
}

impl Work for StepsWork {
    fn schema() -> Json {
        schema()
    }

    fn tools() -> Vec<Tool> {
        vec![tool("validate_steps", &schema()), tool("run_steps", &schema())]
    }

    fn call(&self, name: &str, arguments: &Json) -> Result<(Json, &'static str), ErrorData> {
        let program = &arguments["steps"];
        match name {
            "validate_steps" => {
                let verdict = Self::validate(program);
                let text = if verdict.valid { "valid" } else { "invalid" };
                Ok((serde_json::to_value(&verdict).unwrap_or_default(), text))
            }
            "run_steps" => match self.execute(program) {
                Ok(executed) => Ok((executed, "success")),
                Err(refused) => Ok((refused, "validation_error")),
            },
            other => Err(ErrorData::invalid_params(format!("Unknown tool: {other}"), None)),
        }
    }
}
