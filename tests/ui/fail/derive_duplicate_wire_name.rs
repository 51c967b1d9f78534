// Two members of a closed set with one wire name.
#[derive(Clone, Copy, pilotage::Codes)]
enum Code {
    BadRef,
    #[code(rename = "bad_ref")]
    BadReference,
}

fn main() {
    let _ = (Code::BadRef, Code::BadReference);
}
