// Rule 13: a risk level cannot be both read-only and a write.
#[derive(Clone, Copy, pilotage::RiskLevels)]
enum Risk {
    #[risk(read_only)]
    Safe,
    #[risk(read_only, write)]
    Update,
}

fn main() {
    let _ = Risk::Safe;
}
