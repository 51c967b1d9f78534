// An unknown argument of a derive attribute, with a did-you-mean.
#[derive(Clone, Copy, pilotage::Codes)]
enum Code {
    #[code(renam = "bad_ref")]
    BadRef,
}

fn main() {
    let _ = Code::BadRef;
}
