// A `Codes` variant named like a reserved code would merge with it silently.
#[derive(Clone, Copy, pilotage::Codes)]
enum TodoCode {
    Malformed,
    Constraint,
}

fn main() {
    let _ = (TodoCode::Malformed, TodoCode::Constraint);
}
