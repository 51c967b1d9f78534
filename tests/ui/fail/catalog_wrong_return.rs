// A catalog method returning `Option<Arc<CatalogSnapshot>>`: one error at its return type.
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

#[derive(Clone, Copy, pilotage::EntryKinds)]
enum TodoKind {
    List,
}

struct Todo;

#[pilotage::language(
    name = "todo/v1",
    title = "Todo lists",
    program = "todo",
    locator = "json-pointer",
    capabilities(guides, catalog, validate),
    guides = "../../../../tests/ui/guides/minimal",
    codes = TodoCode,
    risk = TodoRisk,
    kinds = TodoKind,
    catalog = snapshot,
)]
impl Todo {
    #[loop_tool(validate, name = "validate_todo")]
    fn validate(&self, _todo: &Json, _v: &mut Validation<TodoCode, TodoRisk>) {}

    fn snapshot(&self, _caller: &Caller) -> Option<std::sync::Arc<CatalogSnapshot>> {
        None
    }
}

fn main() {}
