//! The bounds of one evaluation: work and depth.
//!
//! One unit of work is about the cost of evaluating one subschema: every subschema entered and
//! every keyword it holds cost one, and so does each value of the instance a keyword reads
//! (a member looked up, an item or node compared or hashed), plus one per 64 bytes of text
//! read (a string measured, compared or hashed, a member name). A check's work is bounded
//! whatever the schema and the instance, so its time is too: at most 23 ms of CPU at the bound
//! in the release-build measurements of `docs/schema-check.md`.

use super::faults::Fault;

/// The deepest chain of subschema evaluations, across instance levels and references.
pub(super) const MAX_EVAL_DEPTH: u32 = 512;
/// The most work one check may do, in units (see the module docs), both of its passes
/// (deciding, then describing the faults) together.
pub(super) const MAX_WORK: u64 = 1_000_000;
/// Bytes of text read per unit of work.
const TEXT_BYTES_PER_UNIT: u64 = 64;
/// Bytes of a fault's location per unit of work.
const PATH_BYTES_PER_UNIT: u64 = 16;

/// The work of reading `text` besides the unit of the value holding it.
pub(super) fn text_cost(text: &str) -> u64 {
    text.len() as u64 / TEXT_BYTES_PER_UNIT
}

/// The work of writing a fault located at `path`.
pub(super) fn path_cost(path: &str) -> u64 {
    1 + path.len() as u64 / PATH_BYTES_PER_UNIT
}

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
                "the check exceeded its work bound ({MAX_WORK} units: subschemas, keywords and the values they read) on this instance"
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
    /// `units` more work; false once the bound is passed (and from then on).
    pub(super) fn charge(&mut self, units: u64) -> bool {
        if self.stop.is_some() {
            return false;
        }
        self.work = self.work.saturating_add(units);
        if self.work > MAX_WORK {
            self.stop = Some(Stop::Work);
        }
        self.stop.is_none()
    }

    /// One more unit of work; false once the bound is passed.
    pub(super) fn spend(&mut self) -> bool {
        self.charge(1)
    }

    /// The work done so far.
    pub(super) fn used(&self) -> u64 {
        self.work
    }

    /// Into one more subschema holding `keywords` keywords (one unit each, and one for the
    /// subschema); false (and nothing to leave) once a bound is passed.
    pub(super) fn enter(&mut self, keywords: usize) -> bool {
        if !self.charge(1 + keywords as u64) {
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
