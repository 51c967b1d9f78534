// Rule 16: `#[loop_tool]` and `#[plain_tool]` outside a `#[pilotage::language]` impl, reported once, at the validate tool (E0277 with the attribute's message).
use pilotage::prelude::*;

struct Engine;

impl Engine {
    #[loop_tool(validate, name = "validate_x")]
    fn validate(&self, _program: &Json) {}

    #[pilotage::plain_tool(name = "tool")]
    fn tool(&self, _args: &Json) -> Result<Json, String> {
        Ok(Json::Null)
    }
}

fn main() {
    let _ = Engine;
}
