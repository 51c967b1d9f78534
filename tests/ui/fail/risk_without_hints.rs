// Rule 13: every risk level states its hints.
#[derive(Clone, Copy, pilotage::RiskLevels)]
enum Risk {
    Safe,
    #[risk(rename = "change")]
    Write,
}

fn main() {
    let _ = Risk::Safe;
}
