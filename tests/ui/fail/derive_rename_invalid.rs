// A wire name is non-empty and has no whitespace.
#[derive(Clone, Copy, pilotage::Codes)]
enum Code {
    #[code(rename = "bad ref")]
    BadRef,
}

fn main() {
    let _ = Code::BadRef;
}
