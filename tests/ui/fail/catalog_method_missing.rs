// `catalog = ...` naming no method of the impl: one error at the name, with a did-you-mean.
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
    catalog = snapshots,
)]
impl Todo {
    #[loop_tool(validate, name = "validate_todo")]
    fn validate(&self, _todo: &Json, _v: &mut Validation<TodoCode, TodoRisk>) {}

    fn snapshot(&self, _caller: &Caller) -> std::sync::Arc<CatalogSnapshot> {
        unimplemented!()
    }
}

fn main() {}
