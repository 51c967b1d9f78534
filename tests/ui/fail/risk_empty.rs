// Rule 13: a risk set has at least one level.
#[derive(Clone, Copy, pilotage::RiskLevels)]
enum Risk {}

fn main() {}
