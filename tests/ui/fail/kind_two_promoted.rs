// Promoted programs are exposed as one entry kind.
#[derive(Clone, Copy, pilotage::EntryKinds)]
enum Kind {
    #[kind(promoted)]
    Program,
    #[kind(promoted)]
    Flow,
}

fn main() {
    let _ = (Kind::Program, Kind::Flow);
}
