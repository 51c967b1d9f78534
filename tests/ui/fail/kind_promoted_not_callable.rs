// The promoted entry kind is callable.
#[derive(Clone, Copy, pilotage::EntryKinds)]
enum Kind {
    #[kind(promoted, callable = false)]
    Program,
}

fn main() {
    let _ = Kind::Program;
}
