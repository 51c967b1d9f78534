// A tool attribute in an impl without `#[pilotage::language]` and without a validate tool to
// report it: each such attribute is an error at the attribute, saying to add `#[pilotage::language(...)]`.
use pilotage::prelude::*;

struct Todo;

impl Todo {
    /// Counts the lists.
    #[plain_tool(name = "count_lists")]
    fn count(&self, _args: &Json) -> Result<Json, String> {
        Ok(json!(0))
    }
}

fn main() {
    let _ = Todo;
}
