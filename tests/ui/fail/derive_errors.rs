#[derive(Clone, Copy, pilotage::Codes)]
struct NotAnEnum;

#[derive(Clone, Copy, pilotage::Codes)]
enum Codes {
    BadRef,
    #[code(rename = "bad_ref")]
    BadReference,
    WithField(u8),
    #[code(renam = "x")]
    Typo,
}

#[derive(Clone, Copy, pilotage::Statuses)]
enum Status {
    #[status(side_effects = true)]
    Timeout,
    Forgotten,
    #[status(side_effects = false)]
    Partial,
    #[status(side_effects = yes)]
    NotBool,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum NoLevels {}

#[derive(Clone, Copy, pilotage::EntryKinds)]
enum Kind {
    #[kind(callable, callable)]
    Capability,
    #[kind(promoted)]
    Program,
    #[kind(promoted, callable = false)]
    Flow,
}

fn main() {}
