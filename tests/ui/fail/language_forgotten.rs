// A forgotten `#[pilotage::language]` is reported once, at the validate tool (rustc's E0277 with the attribute's message, naming the impl's type), not once per tool.
use pilotage::prelude::*;

struct Todo;

impl Todo {
    #[loop_tool(validate, name = "validate_todo")]
    fn validate(&self, _todo: &Json) {}

    #[loop_tool(execute, name = "run_todo")]
    async fn run(&self, _todo: &Json, _run: &mut Run) -> Finish {
        Finish::done()
    }

    #[loop_tool(trace, name = "trace_todo")]
    fn trace(&self) {}

    /// Counts the lists.
    #[plain_tool(name = "count_lists")]
    fn count(&self, _args: &Json) -> Result<Json, String> {
        Ok(json!(0))
    }
}

fn main() {
    let _ = Todo;
}
