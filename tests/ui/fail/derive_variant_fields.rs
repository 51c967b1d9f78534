// Closed-set members are unit variants.
#[derive(Clone, Copy, pilotage::Codes)]
enum Code {
    Malformed,
    WithField(u8),
}

fn main() {
    let _ = Code::Malformed;
}
