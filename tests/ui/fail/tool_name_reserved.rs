// Rule 10: the runtime serves the fixed tools itself.
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
    capabilities(guides, validate),
    guides = "../../../../tests/ui/guides/minimal",
    codes = Code,
    risk = Risk,
)]
impl Engine {
    #[loop_tool(validate, name = "validate_x")]
    fn validate(&self, _program: &Json, _v: &mut Validation<Code, Risk>) {}

    #[plain_tool(name = "pilotage_get_guide", description = "Clashes with a fixed tool.")]
    fn tool(&self, _args: &Json) -> Result<Json, String> {
        Ok(Json::Null)
    }
}

fn main() {}
