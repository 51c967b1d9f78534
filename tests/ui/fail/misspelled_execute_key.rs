// A misspelled key that `execute` requires is one error: not also "`execute` is declared, so `execution` is required".
use pilotage::prelude::*;

#[derive(Clone, Copy, pilotage::Codes)]
enum TodoCode {
    Malformed,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum TodoRisk {
    #[risk(read_only)]
    Safe,
}

struct Todo;

#[pilotage::language(
    name = "todo/v1",
    title = "Todo lists",
    program = "todo",
    locator = "json-pointer",
    capabilities(guides, validate, execute),
    executon = "immediate",
    trace = "full",
    retension = "session",
    guides = "../../../../tests/ui/guides/minimal",
    codes = TodoCode,
    risk = TodoRisk,
)]
impl Todo {
    #[loop_tool(validate, name = "validate_todo")]
    fn validate(&self, _todo: &Json, _v: &mut Validation<TodoCode, TodoRisk>) {}

    #[loop_tool(execute, name = "run_todo")]
    async fn run(&self, _todo: &Json, _run: &mut Run) -> Finish {
        Finish::done()
    }
}

fn main() {}
