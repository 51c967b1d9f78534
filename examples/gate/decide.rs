//! The Host risk rule of Part II §7.3, in one place: which risk needs approval.
//!
//! The rule belongs to `pilotage::host` (issue 29); until its gate decision is public this
//! module is the gate's only copy of it, so switching to the library is a change here alone.

use serde_json::Value;

/// What the gate knows of a program's risk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Risk {
    /// Neither `destructive` nor `openWorld`.
    Safe,
    /// `destructive` or `openWorld` (or both).
    Risky {
        /// `destructive` is true.
        destructive: bool,
        /// `openWorld` is true.
        open_world: bool,
    },
    /// No risk information, or information the gate cannot read: treated as risky (fail
    /// closed), and never pre-approved by a policy.
    Unknown,
}

impl Risk {
    /// The risk of one `risk_hints` object (a plan's `max_risk_hints`, a catalog entry's
    /// `risk_hints`): [`Risk::Unknown`] unless `destructive` and `openWorld` are both booleans.
    pub fn of_hints(hints: &Value) -> Risk {
        match (hints["destructive"].as_bool(), hints["openWorld"].as_bool()) {
            (Some(false), Some(false)) => Risk::Safe,
            (Some(destructive), Some(open_world)) => Risk::Risky { destructive, open_world },
            _ => Risk::Unknown,
        }
    }

    /// The aggregate of several entries' risks (OR over the hints). Nothing to aggregate is
    /// no risk information: [`Risk::Unknown`].
    pub fn aggregate(all: impl IntoIterator<Item = Risk>) -> Risk {
        let (mut any, mut destructive, mut open_world) = (false, false, false);
        for risk in all {
            any = true;
            match risk {
                Risk::Unknown => return Risk::Unknown,
                Risk::Safe => {}
                Risk::Risky { destructive: d, open_world: o } => {
                    destructive |= d;
                    open_world |= o;
                }
            }
        }
        match (any, destructive || open_world) {
            (false, _) => Risk::Unknown,
            (true, false) => Risk::Safe,
            (true, true) => Risk::Risky { destructive, open_world },
        }
    }

    /// Whether an execute of this risk needs approval (Part II §7.3).
    pub fn needs_approval(self) -> bool {
        self != Risk::Safe
    }

    /// The hints in words, for the question, the refusal and the audit line.
    pub fn words(self) -> &'static str {
        match self {
            Risk::Safe => "safe",
            Risk::Risky { destructive: true, open_world: true } => "destructive and openWorld",
            Risk::Risky { destructive: true, .. } => "destructive",
            Risk::Risky { .. } => "openWorld",
            Risk::Unknown => "unknown (no risk information: treated as risky)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Risk;
    use serde_json::json;

    #[test]
    fn hints_and_their_aggregate() {
        let safe = json!({"readOnly": true, "destructive": false, "openWorld": false});
        let write = json!({"readOnly": false, "destructive": false, "openWorld": false});
        let gone = json!({"readOnly": false, "destructive": true, "openWorld": false});
        let out = json!({"readOnly": true, "destructive": false, "openWorld": true});
        assert_eq!(Risk::of_hints(&safe), Risk::Safe);
        assert_eq!(Risk::of_hints(&write), Risk::Safe);
        assert_eq!(Risk::of_hints(&gone), Risk::Risky { destructive: true, open_world: false });
        assert_eq!(Risk::of_hints(&out), Risk::Risky { destructive: false, open_world: true });
        assert_eq!(Risk::of_hints(&json!({"destructive": false})), Risk::Unknown);
        assert_eq!(Risk::of_hints(&json!({"destructive": "no", "openWorld": false})), Risk::Unknown);
        assert_eq!(Risk::of_hints(&json!(null)), Risk::Unknown);
        let both = Risk::aggregate([Risk::of_hints(&gone), Risk::of_hints(&out), Risk::Safe]);
        assert_eq!(both, Risk::Risky { destructive: true, open_world: true });
        assert_eq!(Risk::aggregate([Risk::Safe, Risk::Safe]), Risk::Safe);
        assert_eq!(Risk::aggregate([Risk::Safe, Risk::Unknown]), Risk::Unknown);
        assert_eq!(Risk::aggregate([]), Risk::Unknown);
        assert!(!Risk::Safe.needs_approval());
        assert!(Risk::Unknown.needs_approval());
        assert!(Risk::Risky { destructive: false, open_world: true }.needs_approval());
    }
}
