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
    execution = "both",
    trace = "summary",
    retention = "P30D",
    guides = "../../../../tests/ui/guides/minimal",
    codes = Code,
    risk = Risk,
)]
impl Engine {
    #[loop_tool(validate, name = "validate_x")]
    async fn validate(&self, _program: &Json) {}

    #[loop_tool(execute, name = "run_x")]
    fn run(self, _program: &Json, _run: &mut Run) -> Finish {
        Finish::done()
    }

    #[plain_tool(name = "tool", description = "A tool.")]
    fn tool() -> Result<Json, String> {
        Ok(Json::Null)
    }
}

fn main() {}
