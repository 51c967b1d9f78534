// Rule 13: an engine status cannot take a reserved status name (whose `ok` value the runtime
// fixes).
#[derive(Clone, Copy, pilotage::Statuses)]
enum Status {
    #[status(side_effects = true)]
    Partial,
    #[status(side_effects = false, rename = "success")]
    Fine,
}

fn main() {
    let _ = Status::Partial;
}
