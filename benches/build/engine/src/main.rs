//! The minimal stdio engine of `cargo bench --bench build`: the README's calc engine, alone in a crate.

use pilotage::prelude::*;

#[derive(Clone, Copy, pilotage::Codes)]
enum CalcCode {
    UnknownOp, // the reserved constraint, input_binding and context_binding are added
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum CalcRisk {
    #[risk(read_only)]
    Safe,
}

pub struct Calc;

#[pilotage::language(
    name = "calc/v1", title = "Arithmetic programs", program = "calc", locator = "json-pointer",
    capabilities(guides, validate, plan, execute), execution = "immediate", trace = "full",
    retention = "none", guides = "guides", codes = CalcCode, risk = CalcRisk,
)]
impl Calc {
    #[loop_tool(validate, name = "validate_calc")]
    fn validate(&self, program: &Json, v: &mut Validation<CalcCode, CalcRisk>) {
        if program["op"] != "add" {
            v.error(CalcCode::UnknownOp, "/op", "only `add` exists").hint("use \"add\"");
        }
        v.step("sum", CalcRisk::Safe);
    }

    #[loop_tool(execute, name = "run_calc", no_input)] // a Run given `input` is refused
    async fn run(&self, program: &Json, run: &mut Run) -> Finish {
        let sum: f64 = program["args"].as_array().into_iter().flatten().filter_map(Json::as_f64).sum();
        run.step("sum").input(program["args"].clone()).output(json!(sum)).succeeded();
        Finish::output(json!({ "sum": sum }))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    Ok(Server::builder().language(|| Calc).build()?.serve_stdio().await?)
}
