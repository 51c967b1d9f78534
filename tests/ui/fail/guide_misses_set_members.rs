// The sets the closed-sets guide must enumerate follow the capabilities (Part II §5.2): risk
// levels with `catalog` or `plan`, statuses (reserved ones included) with `execute`, entry
// kinds with `catalog`. This guide omits one member of each; every set is reported.
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
    #[risk(write)]
    Write,
}

#[derive(Clone, Copy, pilotage::Statuses)]
enum Status {
    #[status(side_effects = true)]
    Timeout,
}

#[derive(Clone, Copy, pilotage::EntryKinds)]
enum Kind {
    #[kind(callable)]
    Capability,
    Dataset,
}

struct Engine;

#[pilotage::language(
    name = "x/v1",
    title = "X",
    program = "program",
    locator = "json-pointer",
    capabilities(guides, catalog, validate, plan, execute),
    execution = "immediate",
    trace = "summary",
    retention = "session",
    guides = "../../../../tests/ui/guides/misses_sets",
    codes = Code,
    risk = Risk,
    statuses = Status,
    kinds = Kind,
    catalog = catalog_snapshot,
)]
impl Engine {
    fn catalog_snapshot(&self, _caller: &Caller) -> Arc<CatalogSnapshot> {
        Arc::new(CatalogSnapshot::new(Vec::new()))
    }

    #[loop_tool(validate, name = "validate_x")]
    fn validate(&self, _program: &Json, _v: &mut Validation<Code, Risk>) {}

    #[loop_tool(execute, name = "run_x")]
    async fn run(&self, _program: &Json, _run: &mut Run<Status>) -> Finish<Status> {
        Finish::done()
    }
}

fn main() {}
