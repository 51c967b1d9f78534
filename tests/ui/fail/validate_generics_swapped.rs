// `Validation<Risk, Code>`: one error at the generics, in the declaration's own type names.
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
    fn validate(&self, todo: &Json, v: &mut Validation<TodoRisk, TodoCode>) {
        if !todo.is_object() {
            v.error(TodoCode::Malformed, "", "a todo list is an object");
        }
        v.step("all", TodoRisk::Safe);
    }
}

fn main() {}
