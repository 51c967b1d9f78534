// A plain tool returning `Json` instead of a `Result`: one error at the return type.
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
    capabilities(guides, validate),
    guides = "../../../../tests/ui/guides/minimal",
    codes = TodoCode,
    risk = TodoRisk,
)]
impl Todo {
    #[loop_tool(validate, name = "validate_todo")]
    fn validate(&self, _todo: &Json, _v: &mut Validation<TodoCode, TodoRisk>) {}

    /// Counts the lists.
    #[plain_tool(name = "count_lists")]
    fn count(&self, _args: &Json) -> Json {
        json!(0)
    }
}

fn main() {}
