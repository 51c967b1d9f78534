// A derive attribute argument with a value of the wrong shape.
#[derive(Clone, Copy, pilotage::Statuses)]
enum Status {
    #[status(side_effects = yes)]
    Timeout,
}

fn main() {
    let _ = Status::Timeout;
}
