// Every mistake of one declaration is reported in a single compile, each at its own tokens.
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
    name = "x",
    title = "X",
    program = "input",
    locator = "json_pointer",
    capabilities(guides(topic_fetch, search), validate, exec, trace_fetch),
    execution = "immediate",
    retention = "1 hour",
    guides = "../../../../tests/ui/guides/minimal",
    codes = Code,
    risk = Risk,
    kinds = Risk,
)]
impl Engine {
    #[loop_tool(validate, name = "validate x")]
    fn validate(&mut self, _program: &Json, _v: &mut Validation<Code, Risk>) {}

    #[loop_tool(validate, name = "validate_again")]
    fn validate_again(&self, _program: &Json, _v: &mut Validation<Code, Risk>) {}

    #[plain_tool(name = "pilotage_manifest", description = "Clashes.", input_schema = "[]")]
    fn clash(&self, _args: &Json) -> Result<Json, String> {
        Ok(Json::Null)
    }

    #[plain_tool(nmae = "x")]
    fn typo(&self, _args: &Json) -> Result<Json, String> {
        Ok(Json::Null)
    }
}

fn main() {}
