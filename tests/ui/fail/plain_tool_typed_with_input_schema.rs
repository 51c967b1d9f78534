// `input_schema` on a tool whose typed arguments give the schema.
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
struct AddList {
    title: String,
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

    /// Adds a list.
    #[plain_tool(name = "add_list", input_schema = r#"{"type": "object"}"#)]
    fn add(&self, args: AddList) -> Result<Json, String> {
        Ok(json!(args.title))
    }
}

fn main() {}
