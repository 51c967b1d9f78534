// The context schema given both as a file and as a type.
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

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct TodoContext {
    owner: String,
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
    context_schema = "../../../../tests/ui/schemas/context.json",
    context = TodoContext,
)]
impl Todo {
    #[loop_tool(validate, name = "validate_todo")]
    fn validate(&self, _todo: &Json, _v: &mut Validation<TodoCode, TodoRisk>) {}
}

fn main() {}
