// Risk levels written most risky first: the order contradicts the hints.
#[derive(Clone, Copy, pilotage::RiskLevels)]
enum TodoRisk {
    #[risk(destructive)]
    Purge,
    #[risk(write)]
    Edit,
    #[risk(read_only)]
    Read,
}

fn main() {
    let _ = (TodoRisk::Purge, TodoRisk::Edit, TodoRisk::Read);
}
