//! Risk (Part II §5.3): an engine-defined level plus generic `risk_hints`, and their aggregation.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The generic risk booleans a Host gate reads.
///
/// ```
/// use pilotage_runtime::model::risk::RiskHints;
/// let max = RiskHints::aggregate([RiskHints::READ_ONLY, RiskHints::DESTRUCTIVE]);
/// assert_eq!(max, RiskHints { read_only: false, destructive: true, open_world: false });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RiskHints {
    /// No persistent state change and nothing observable outside the Run.
    pub read_only: bool,
    /// May delete state or alter it irreversibly.
    pub destructive: bool,
    /// May reach a system outside the server's own domain.
    pub open_world: bool,
}

impl RiskHints {
    /// Reads only.
    pub const READ_ONLY: RiskHints = RiskHints::new(true, false, false);
    /// Writes, reversibly.
    pub const WRITE: RiskHints = RiskHints::new(false, false, false);
    /// May destroy state.
    pub const DESTRUCTIVE: RiskHints = RiskHints::new(false, true, false);

    /// Hints from the three booleans.
    pub const fn new(read_only: bool, destructive: bool, open_world: bool) -> Self {
        RiskHints { read_only, destructive, open_world }
    }

    /// Whether the hints can describe one operation: read-only excludes destructive.
    pub const fn is_consistent(&self) -> bool {
        !(self.read_only && self.destructive)
    }

    /// The maximum over several steps: AND of `readOnly`, OR of `destructive` and `openWorld`.
    /// The maximum over no steps is read-only.
    pub fn aggregate(hints: impl IntoIterator<Item = RiskHints>) -> RiskHints {
        hints.into_iter().fold(RiskHints::READ_ONLY, |acc, h| RiskHints {
            read_only: acc.read_only && h.read_only,
            destructive: acc.destructive || h.destructive,
            open_world: acc.open_world || h.open_world,
        })
    }

    /// Whether `self` is at least as restrictive as `other` (an honest promoted entry's risk
    /// must be at least as restrictive as its body's aggregate).
    pub const fn covers(&self, other: &RiskHints) -> bool {
        (!self.read_only || other.read_only)
            && (self.destructive || !other.destructive)
            && (self.open_world || !other.open_world)
    }
}
