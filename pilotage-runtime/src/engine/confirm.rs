//! A catalog snapshot that its Run confirms: an engine whose snapshot costs a round trip to
//! prove current (a database's catalog stamp) may, for an execute only, answer the snapshot it
//! kept without that proof and confirm it inside the Run instead, in the same round trip as
//! the Run's first statement. The runtime admits the program against the kept snapshot; a Run
//! that finds it moved says so before doing anything ([`Run::catalog_moved`]), and the runtime
//! takes a current snapshot, admits the program against it and runs it once more.
//!
//! [`Run::catalog_moved`]: super::Run::catalog_moved

use std::cell::Cell;
use std::sync::Arc;

use super::{Caller, CatalogSnapshot, Engine};

/// What the snapshot being taken on this thread is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Taking {
    /// Not inside a `catalog` method the runtime called, or a snapshot that must be current.
    Current,
    /// A snapshot for an execute whose Run may confirm it.
    ForRun,
    /// As `ForRun`, and the engine deferred its confirmation to the Run.
    Deferred,
}

thread_local! {
    static TAKING: Cell<Taking> = const { Cell::new(Taking::Current) };
}

/// Called in an engine's `catalog` method: whether the snapshot it returns may be one it kept
/// earlier, without proving it is still current, because the Run it is taken for confirms it.
/// `true` commits the engine: the Run then sees [`Run::catalog_unconfirmed`] and must check,
/// before any step, that the catalog is still the one of [`Run::catalog`] (or call
/// [`Run::catalog_moved`]). `false` (a validation, a catalog read, a second attempt, any call
/// outside the runtime): the snapshot must be current.
///
/// Call it only when the answer will be used: once it returned `true`, the Run is told its
/// snapshot is unconfirmed, whatever the method then returns.
///
/// ```
/// // Outside a snapshot the runtime takes for a Run, a snapshot must always be current.
/// assert!(!pilotage::engine::confirm::defer_to_run());
/// ```
///
/// [`Run::catalog_unconfirmed`]: super::Run::catalog_unconfirmed
/// [`Run::catalog`]: super::Run::catalog
/// [`Run::catalog_moved`]: super::Run::catalog_moved
pub fn defer_to_run() -> bool {
    TAKING.with(|t| match t.get() {
        Taking::Current => false,
        Taking::ForRun | Taking::Deferred => {
            t.set(Taking::Deferred);
            true
        }
    })
}

/// Take a snapshot with `take` on this thread, for a Run that may confirm it when `for_run`:
/// the snapshot, and whether the engine deferred its confirmation ([`defer_to_run`]).
pub(crate) fn taking<T>(for_run: bool, take: impl FnOnce() -> T) -> (T, bool) {
    let before = TAKING.with(|t| t.replace(if for_run { Taking::ForRun } else { Taking::Current }));
    // Restored even when `take` panics (the engine thread lives on).
    struct Restore(Taking);
    impl Drop for Restore {
        fn drop(&mut self) {
            TAKING.with(|t| t.set(self.0));
        }
    }
    let restore = Restore(before);
    let taken = take();
    let deferred = TAKING.with(|t| t.get() == Taking::Deferred);
    drop(restore);
    (taken, deferred)
}

/// The engine's catalog snapshot for `caller`, taken on this (engine) thread for a Run that may
/// confirm it when `for_run`: the snapshot (`None` from an engine without one), and whether the
/// engine deferred its confirmation ([`taking`]).
pub(crate) fn snapshot(
    engine: &dyn Engine,
    caller: &Caller,
    for_run: bool,
) -> (Option<Arc<CatalogSnapshot>>, bool) {
    taking(for_run, || engine.catalog_snapshot(caller))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_snapshot_for_a_run_may_defer_its_confirmation_and_the_thread_forgets_it_after() {
        assert_eq!(taking(false, defer_to_run), (false, false));
        assert_eq!(taking(true, || 7), (7, false));
        assert_eq!(taking(true, defer_to_run), (true, true));
        assert!(!defer_to_run());
        let nested = taking(true, || taking(false, defer_to_run));
        assert_eq!(nested, ((false, false), false));
        let panicked = std::panic::catch_unwind(|| taking(true, || panic!("engine")));
        assert!(panicked.is_err());
        assert!(!defer_to_run());
    }
}
