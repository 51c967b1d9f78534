// `#[pilotage::language]` on the engine's enum, whose impl has no validate tool: one error, at the enum; the impl's execute and plain tools add none.
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

#[pilotage::language(
    name = "todo/v1",
    title = "Todo lists",
    program = "todo",
    locator = "json-pointer",
    capabilities(guides, validate, execute),
    execution = "immediate",
    trace = "full",
    retention = "session",
    guides = "../../../../tests/ui/guides/minimal",
    codes = TodoCode,
    risk = TodoRisk,
)]
enum Todo {
    Lists,
}

impl Todo {
    #[loop_tool(execute, name = "run_todo")]
    async fn run(&self, _todo: &Json, _run: &mut Run) -> Finish {
        Finish::done()
    }

    /// Counts the lists.
    #[plain_tool(name = "count_lists")]
    fn count(&self, _args: &Json) -> Result<Json, String> {
        Ok(json!(0))
    }
}

fn main() {
    let _server = Server::builder().language(|| Todo::Lists);
}
