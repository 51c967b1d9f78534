// An execute future that is not `Send` (an `Rc` held across `.await`): one error at the method, saying the fix.
use std::rc::Rc;

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

async fn tick() {}

#[pilotage::language(
    name = "todo/v1",
    title = "Todo lists",
    program = "todo",
    locator = "json-pointer",
    capabilities(guides, validate, execute),
    execution = "immediate",
    trace = "full",
    retention = "session",
    guides = "../../../../tests/ui/guides/minimal",
    codes = TodoCode,
    risk = TodoRisk,
)]
impl Todo {
    #[loop_tool(validate, name = "validate_todo")]
    fn validate(&self, _todo: &Json, _v: &mut Validation<TodoCode, TodoRisk>) {}

    #[loop_tool(execute, name = "run_todo")]
    async fn run(&self, _todo: &Json, _run: &mut Run) -> Finish {
        let shared = Rc::new(1);
        tick().await;
        Finish::output(json!(*shared))
    }
}

fn main() {}
