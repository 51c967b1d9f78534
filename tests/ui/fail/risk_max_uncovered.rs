// `max_risk` names one level, so every maximum two levels can reach must be a level.
#[derive(Clone, Copy, pilotage::RiskLevels)]
enum Risk {
    #[risk(read_only)]
    Safe,
    #[risk(destructive)]
    Wipe,
    #[risk(open_world)]
    Mail,
}

fn main() {
    let _ = Risk::Safe;
}
