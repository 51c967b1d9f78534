// `inline` declares a cheap validator: it goes on the validate tool, never on execute.
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
    #[loop_tool(validate, name = "validate_job")]
    fn validate(&self, _program: &Json, v: &mut Validation<Code, Risk>) {
        v.step("job", Risk::Safe);
    }

    #[loop_tool(execute, name = "run_job", inline)]
    async fn run(&self, _program: &Json, _run: &mut Run<Status>) -> Finish<Status> {
        Finish::output(json!("done"))
    }
}

fn main() {}
