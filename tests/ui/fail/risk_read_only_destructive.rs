// Rule 13: a risk level cannot be both read-only and destructive.
#[derive(Clone, Copy, pilotage::RiskLevels)]
enum Risk {
    #[risk(read_only)]
    Safe,
    #[risk(read_only, destructive)]
    Wipe,
}

fn main() {
    let _ = Risk::Safe;
}
