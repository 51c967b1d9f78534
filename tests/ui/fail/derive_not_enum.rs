// The closed-set derives work on fieldless enums.
#[derive(Clone, Copy, pilotage::Codes)]
struct Code;

fn main() {}
