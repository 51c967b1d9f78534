//! Execution mode `immediate`: an async execute method with engine statuses, a duration
//! retention and `plan`, whose closed-sets guide names the risk levels and every status.

use pilotage::engine::{ExecuteRequest, Recorder};
use pilotage::engine::Engine;
use pilotage::model::declaration::{ExecutionMode, Retention};
use pilotage::prelude::*;

#[derive(Clone, Copy, pilotage::Codes)]
enum Code {
    Malformed,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum Risk {
    #[risk(read_only)]
    Safe,
    #[risk(write)]
    Write,
}

#[derive(Clone, Copy, pilotage::Statuses)]
enum Status {
    #[status(side_effects = true)]
    Timeout,
}

struct Jobs;

#[pilotage::language(
    name = "jobs/v1",
    title = "Job scripts",
    program = "job",
    locator = "json-pointer",
    capabilities(guides, validate, plan, execute(idempotency)),
    execution = "immediate",
    trace = "summary",
    retention = "P1DT12H",
    guides = "../../../../tests/ui/guides/immediate",
    codes = Code,
    risk = Risk,
    statuses = Status,
)]
impl Jobs {
    /// Checks a job.
    #[loop_tool(validate, name = "validate_job")]
    fn validate(&self, program: &Json, v: &mut Validation<Code, Risk>) {
        match program.get("write").and_then(Json::as_bool) {
            Some(true) => {
                v.step("job", Risk::Write);
            }
            Some(false) => {
                v.step("job", Risk::Safe);
            }
            None => {
                v.error(Code::Malformed, "/write", "`write` is a boolean");
            }
        }
    }

    /// Runs a job now.
    #[loop_tool(execute, name = "run_job")]
    async fn run(&self, program: &Json, _run: &mut Run<Status>) -> Finish<Status> {
        match program.get("slow") {
            Some(_) => Finish::failed(Status::Timeout, "the job took too long"),
            None => Finish::output(json!("done")),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let spec = Jobs.language_spec();
    assert_eq!(spec.execution, Some(ExecutionMode::Immediate));
    assert_eq!(spec.trace.map(|t| t.as_str()), Some("summary"));
    assert_eq!(
        spec.retention,
        Some(Retention::Duration { iso: "P1DT12H", length: std::time::Duration::from_secs(36 * 3600) })
    );
    assert_eq!(spec.tools.execute.as_ref().map(|t| t.name), Some("run_job"));
    assert_eq!(spec.sets.statuses.len(), 7);
    let request = |program: Json| ExecuteRequest {
        run_id: "r1".into(),
        program: std::sync::Arc::new(program),
        input: None,
        context: None,
        catalog: None,
        caller: Caller::new("me"),
        mode: ExecutionMode::Immediate,
        test_run: false,
        promoted: Default::default(),
    };
    let done = Jobs.execute_program(&request(json!({"write": false})), Recorder::new(10)).await;
    assert_eq!(done.output, Some(json!("done")));
    let slow = Jobs.execute_program(&request(json!({"slow": true})), Recorder::new(10)).await;
    assert_eq!(slow.outcome.status(), "timeout");
}
