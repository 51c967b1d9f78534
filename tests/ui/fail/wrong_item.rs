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

trait Other {}

#[pilotage::language(name = "x/v1")]
impl Other for Engine {}

#[pilotage::language(name = "x/v1")]
fn not_an_impl() {}

#[pilotage::language(name = "x/v1")]
impl Engine {
    #[loop_tool(validate, name = "validate_x")]
    fn validate(&self, _program: &Json, _v: &mut Validation<Code, Risk>) {}
}

fn main() {
    not_an_impl();
}
