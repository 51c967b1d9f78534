//! The bounds of one evaluation: work and depth.

use super::faults::Fault;

/// The deepest chain of subschema evaluations, across instance levels and references.
pub(super) const MAX_EVAL_DEPTH: u32 = 512;
/// The most work one check may do: subschema evaluations and `uniqueItems` comparisons.
pub(super) const MAX_WORK: u64 = 1_000_000;

/// Why an evaluation stopped short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    Work,
    Depth,
}

impl Stop {
    pub(super) fn fault(self) -> Fault {
        let message = match self {
            Stop::Work => format!(
                "the check exceeded its work bound ({MAX_WORK} subschema evaluations) on this instance"
            ),
            Stop::Depth => {
                format!("the check exceeded its depth bound ({MAX_EVAL_DEPTH} nested subschemas) on this instance")
            }
        };
        Fault { path: String::new(), message }
    }
}

/// The work and depth an evaluation has used.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Budget {
    work: u64,
    depth: u32,
    pub(super) stop: Option<Stop>,
}

impl Budget {
    /// One more unit of work; false once the bound is passed.
    pub(super) fn spend(&mut self) -> bool {
        if self.stop.is_some() {
            return false;
        }
        self.work += 1;
        if self.work > MAX_WORK {
            self.stop = Some(Stop::Work);
        }
        self.stop.is_none()
    }

    /// Into one more subschema; false (and nothing to leave) once a bound is passed.
    pub(super) fn enter(&mut self) -> bool {
        if !self.spend() {
            return false;
        }
        if self.depth >= MAX_EVAL_DEPTH {
            self.stop = Some(Stop::Depth);
            return false;
        }
        self.depth += 1;
        true
    }

    pub(super) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}
