//! The plan–trace correspondence check of Part II §5.8.4, for engine authors' own tests.
//!
//! ```
//! use pilotage_runtime::model::correspondence::{base_id, check};
//! assert_eq!(base_id("call1#2/body#3"), "body");
//! assert_eq!(base_id("step#2#4"), "step");
//! # let _ = check;
//! ```

use std::collections::{BTreeMap, BTreeSet};

use super::plan::{Plan, PlanStep};
use super::trace::Trace;

/// The base program step identifier of a trace entry: the segment after the last `/`, without
/// its `#n` suffixes.
pub fn base_id(trace_id: &str) -> &str {
    let last = trace_id.rsplit('/').next().unwrap_or(trace_id);
    last.split('#').next().unwrap_or(last)
}

/// Check that `trace` corresponds to `plan` (Part II §5.8.4) for an immediate run or a test
/// run. `completed` is true for a Run with outcome `success`.
///
/// Checked over unprefixed entries (no `/`): every entry maps by base id to the expected set
/// and invokes the same entry as its plan step; steps of unselected arms are absent; for a
/// completed run every expected step appears (loop-body steps at least once when their loop
/// iterated). Returns every violation found.
pub fn check(plan: &Plan, trace: &Trace, completed: bool) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let by_id: BTreeMap<&str, &PlanStep> = plan.steps.iter().map(|s| (s.id.as_str(), s)).collect();
    let branches: BTreeSet<&str> =
        plan.steps.iter().filter_map(|s| s.arm.as_ref().map(|a| a.branch.as_str())).collect();
    let entries: Vec<_> = trace.steps.iter().filter(|s| !s.id.contains('/')).collect();

    let mut taken: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut iterated: BTreeSet<&str> = BTreeSet::new();
    for e in &entries {
        let base = base_id(&e.id);
        for d in e.decisions.iter().flatten() {
            if branches.contains(base) {
                taken.entry(base).or_default().insert(d.took.as_str());
            } else if d.took == "continue" {
                iterated.insert(base);
            }
        }
    }
    let expected: BTreeSet<&str> = plan
        .steps
        .iter()
        .filter(|s| match (&s.arm, &s.in_loop) {
            (None, None) => true,
            (Some(arm), _) => {
                taken.get(arm.branch.as_str()).is_some_and(|labels| labels.contains(arm.label.as_str()))
            }
            (None, Some(l)) => iterated.contains(l.as_str()),
        })
        .map(|s| s.id.as_str())
        .collect();

    for e in &entries {
        let base = base_id(&e.id);
        match by_id.get(base) {
            None => problems.push(format!("trace entry '{}' has no plan step '{base}'", e.id)),
            Some(step) => {
                if !expected.contains(base) {
                    problems.push(format!(
                        "trace entry '{}' belongs to an arm or loop body that was not selected",
                        e.id
                    ));
                }
                if e.calls != step.calls {
                    problems.push(format!(
                        "trace entry '{}' calls {:?} but its plan step calls {:?}",
                        e.id, e.calls, step.calls
                    ));
                }
            }
        }
    }
    if completed {
        let present: BTreeSet<&str> = entries.iter().map(|e| base_id(&e.id)).collect();
        for id in &expected {
            if !present.contains(id) {
                problems.push(format!("plan step '{id}' is expected but absent from the trace"));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}
