#[derive(Clone, Copy, pilotage::RiskLevels)]
enum Risk {
    #[risk(read_only)]
    Safe,
    #[risk(read_only, destructive)]
    Wipe,
    #[risk(read_only, write)]
    Confused,
    Unmarked,
    #[risk(destrutive)]
    Typo,
}

fn main() {
    let _ = Risk::Safe;
}
