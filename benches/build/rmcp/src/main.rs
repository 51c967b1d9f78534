//! The minimal rmcp server of `cargo bench --bench build`: one `#[tool_router]` tool over stdio.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{schemars, tool, tool_router, ServiceExt};
use serde::{Deserialize, Serialize};

struct Calc;

#[derive(Deserialize, schemars::JsonSchema)]
struct Args {
    args: Vec<f64>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Sum {
    sum: f64,
}

#[tool_router(server_handler)]
impl Calc {
    #[tool(name = "run_calc", description = "Adds numbers")]
    fn run(&self, Parameters(Args { args }): Parameters<Args>) -> Json<Sum> {
        Json(Sum { sum: args.iter().sum() })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    Calc.serve(rmcp::transport::stdio()).await?.waiting().await?;
    Ok(())
}
