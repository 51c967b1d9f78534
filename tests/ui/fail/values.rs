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
    name = "x/v1/extra",
    title = "",
    title = "Again",
    program = "9lives",
    locator = "text",
    capabilities(guides, validate),
    trace_subprogram = "expand",
    promotion_authority = "owner",
    context_schema = "../../../../tests/ui/schemas/not_object.json",
    guides = "../../../../tests/ui/guides/minimal",
    codes = "Code",
    risk = Risk,
    catalog = catalog_snapshot,
)]
impl Engine {
    #[loop_tool(validate, name = "validate_x")]
    fn validate(&self, _program: &Json, _v: &mut Validation<Code, Risk>) {}

    #[plain_tool(name = "validate_x", description = "Same name as the validate tool.")]
    fn tool(&self, _args: &Json) -> Result<Json, String> {
        Ok(Json::Null)
    }

    #[plain_tool(description = "No name.")]
    fn nameless(&self, _args: &Json) -> Result<Json, String> {
        Ok(Json::Null)
    }

    #[plain_tool(name = "", description = "Empty name.")]
    fn empty(&self, _args: &Json) -> Result<Json, String> {
        Ok(Json::Null)
    }

    #[plain_tool(name = "documented")]
    fn undocumented(&self, _args: &Json) -> Result<Json, String> {
        Ok(Json::Null)
    }
}

fn main() {}
