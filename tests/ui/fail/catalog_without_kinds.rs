// Rule 14: `catalog` declared without its entry kinds.
use std::sync::Arc;

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

#[pilotage::language(
    name = "x/v1",
    title = "X",
    program = "program",
    locator = "json-pointer",
    capabilities(guides, catalog, validate),
    guides = "../../../../tests/ui/guides/minimal",
    codes = Code,
    risk = Risk,
    catalog = catalog_snapshot,
)]
impl Engine {
    fn catalog_snapshot(&self, _caller: &Caller) -> Arc<CatalogSnapshot> {
        Arc::new(CatalogSnapshot::new(Vec::new()))
    }

    #[loop_tool(validate, name = "validate_x")]
    fn validate(&self, _program: &Json, _v: &mut Validation<Code, Risk>) {}
}

fn main() {}
