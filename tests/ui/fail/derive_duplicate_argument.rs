// A derive attribute argument given twice.
#[derive(Clone, Copy, pilotage::EntryKinds)]
enum Kind {
    #[kind(callable, callable)]
    Capability,
}

fn main() {
    let _ = Kind::Capability;
}
