// Rule 13: a run status states its side-effect flag.
#[derive(Clone, Copy, pilotage::Statuses)]
enum Status {
    #[status(side_effects = true)]
    Timeout,
    Denied,
    #[status(rename = "quota")]
    QuotaExceeded,
}

fn main() {
    let _ = Status::Timeout;
}
