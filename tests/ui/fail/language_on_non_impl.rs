// Rule 16: `#[pilotage::language]` goes on an impl block.
#[pilotage::language(name = "x/v1")]
fn not_an_impl() {}

fn main() {
    not_an_impl();
}
