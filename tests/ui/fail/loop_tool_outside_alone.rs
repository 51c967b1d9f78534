// An execute tool in an impl without `#[pilotage::language]` and without a validate tool to report it: the error is at the attribute, saying to add `#[pilotage::language(...)]`.
use pilotage::prelude::*;

struct Todo;

impl Todo {
    #[loop_tool(execute, name = "run_todo")]
    async fn run(&self, _todo: &Json, _run: &mut Run) -> Finish {
        Finish::done()
    }
}

fn main() {
    let _ = Todo;
}
