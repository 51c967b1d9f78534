// Rule 16: a `#[plain_tool]` key on a `#[loop_tool]` is an error (it used to be accepted and
// ignored): the runtime writes the loop tools' descriptions and schemas.
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
    #[loop_tool(validate, name = "validate_x", description = "Validates.")]
    fn validate(&self, _program: &Json, _v: &mut Validation<Code, Risk>) {}
}

fn main() {}
