// Rule 9: `trace_fetch` declared, no trace tool.
use pilotage::prelude::*;

#[derive(Clone, Copy, pilotage::Codes)]
enum Code {
    Malformed,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum Risk {
    #[risk(read_only)]
    Safe,
}

struct Engine;

#[pilotage::language(
    name = "x/v1",
    title = "X",
    program = "program",
    locator = "json-pointer",
    capabilities(guides, validate, execute, trace_fetch),
    execution = "immediate",
    trace = "full",
    retention = "session",
    guides = "../../../../tests/ui/guides/minimal",
    codes = Code,
    risk = Risk,
)]
impl Engine {
    #[loop_tool(validate, name = "validate_x")]
    fn validate(&self, _program: &Json, _v: &mut Validation<Code, Risk>) {}

    #[loop_tool(execute, name = "run_x")]
    async fn run(&self, _program: &Json, _run: &mut Run) -> Finish {
        Finish::done()
    }
}

fn main() {}
