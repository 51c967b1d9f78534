// Rule 6: retention is "none", "session" or an ISO 8601 duration, which is parsed.
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
    capabilities(guides, validate, execute),
    execution = "immediate",
    trace = "full",
    retention = "pt1h",
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
