// A forgotten `use pilotage::prelude::*;`: `#[pilotage::language]` brings the prelude into its
// module, so `Json`, `Validation`, `Run`, `Finish` (and `Server` in `main`) resolve without it.
#[derive(Clone, Copy, pilotage::Codes)]
enum TodoCode {
    Malformed,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum TodoRisk {
    #[risk(read_only)]
    Safe,
}

struct Todo;

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
impl Todo {
    #[loop_tool(validate, name = "validate_todo")]
    fn validate(&self, todo: &Json, v: &mut Validation<TodoCode, TodoRisk>) {
        if !todo.is_object() {
            v.error(TodoCode::Malformed, "", "a todo list is an object");
        }
    }

    #[loop_tool(execute, name = "run_todo")]
    async fn run(&self, _todo: &Json, _run: &mut Run) -> Finish {
        Finish::done()
    }
}

fn main() {
    let server = Server::builder().language(|| Todo).build().expect("the server builds");
    let _ = json!({"todo": []});
    drop(server);
}
