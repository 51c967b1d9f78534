//! The bounds of one engine call that engine code can see: a [`Signal`] (cancellation and the
//! call's deadline) and a [`Budget`] of bytes the call may make the server hold.
//!
//! The runtime runs every engine call (validate, execute, catalog, plain tools) on an engine
//! thread, never on the async workers, with its bounds installed, so
//! [`Validation`](super::Validation), [`Run`](super::Run) and [`StepBuilder`](super::StepBuilder)
//! check them on every call and become inert once the signal fires, and code that has neither
//! at hand (a plain tool, a database progress callback, a value builder deep in an interpreter)
//! reads them with [`Signal::current`] and [`Budget::current`]. Outside an engine call both are
//! unbounded.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whether an engine call must stop: cancelled by the runtime (its deadline passed, the client
/// cancelled, the server shuts down) or past its deadline. Cheap to clone and to check.
#[derive(Clone, Debug)]
pub struct Signal(Arc<SignalState>);

#[derive(Debug)]
struct SignalState {
    deadline: Option<Instant>,
    cancelled: AtomicBool,
}

impl Signal {
    /// A signal that fires at `deadline` or when cancelled.
    pub fn until(deadline: Instant) -> Self {
        Signal(Arc::new(SignalState { deadline: Some(deadline), cancelled: AtomicBool::new(false) }))
    }

    /// A signal that fires only when cancelled.
    pub fn unbounded() -> Self {
        Signal(Arc::new(SignalState { deadline: None, cancelled: AtomicBool::new(false) }))
    }

    /// Fire the signal.
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::Relaxed);
    }

    /// True once cancelled or past the deadline: stop working and return.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::Relaxed) || self.0.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Time left before the deadline (`None`: no deadline).
    pub fn remaining(&self) -> Option<Duration> {
        self.0.deadline.map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// The signal of the engine call running on this thread (unbounded outside one).
    pub fn current() -> Signal {
        CURRENT.with(|c| c.borrow().as_ref().map(|b| b.signal.clone())).unwrap_or_else(Signal::unbounded)
    }
}

/// A count of bytes one engine call may still make the server hold (step inputs and outputs,
/// trace entries, values an engine builds). Shared by clones; once spent, every charge fails.
#[derive(Clone, Debug)]
pub struct Budget(Arc<BudgetState>);

#[derive(Debug)]
struct BudgetState {
    limit: usize,
    spent: AtomicUsize,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Budget(Arc::new(BudgetState { limit, spent: AtomicUsize::new(0) }))
    }

    /// An unlimited budget.
    pub fn unlimited() -> Self {
        Self::new(usize::MAX)
    }

    /// Spend `bytes`; `false` (and the budget stays exhausted) when they do not fit.
    pub fn charge(&self, bytes: usize) -> bool {
        let limit = self.0.limit;
        let fits = |spent: usize| spent.saturating_add(bytes) <= limit;
        let update = |spent: usize| Some(if fits(spent) { spent + bytes } else { usize::MAX });
        let before =
            self.0.spent.fetch_update(Ordering::Relaxed, Ordering::Relaxed, update).unwrap_or(usize::MAX);
        fits(before)
    }

    /// Whether a charge has failed.
    pub fn is_exhausted(&self) -> bool {
        self.0.spent.load(Ordering::Relaxed) > self.0.limit
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> usize {
        self.0.limit
    }

    /// The budget of the engine call running on this thread (unlimited outside one).
    pub fn current() -> Budget {
        CURRENT.with(|c| c.borrow().as_ref().map(|b| b.budget.clone())).unwrap_or_else(Budget::unlimited)
    }
}

/// The bounds of one engine call, installed on the thread that runs it.
#[derive(Clone, Debug)]
pub struct Bounds {
    /// Cancellation and deadline.
    pub signal: Signal,
    /// Bytes the call may make the server hold.
    pub budget: Budget,
    /// Diagnostics a validation keeps (the rest are counted, not kept).
    pub max_diagnostics: usize,
}

impl Bounds {
    /// No bounds at all (engine code called outside the runtime, e.g. in unit tests).
    pub fn unbounded() -> Self {
        Bounds { signal: Signal::unbounded(), budget: Budget::unlimited(), max_diagnostics: usize::MAX }
    }

    /// The bounds installed on this thread, if any.
    pub fn current() -> Bounds {
        CURRENT.with(|c| c.borrow().clone()).unwrap_or_else(Bounds::unbounded)
    }

    /// Install these bounds on this thread until the guard drops.
    pub fn enter(&self) -> Entered {
        let previous = CURRENT.with(|c| c.replace(Some(self.clone())));
        Entered { previous }
    }
}

/// Restores the previous bounds of the thread when dropped; see [`Bounds::enter`].
#[must_use = "the bounds are installed only while the guard lives"]
pub struct Entered {
    previous: Option<Bounds>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Bounds>> = const { RefCell::new(None) };
}

/// The size of `v`'s JSON text, counted without building it.
pub fn json_size<T: serde::Serialize + ?Sized>(v: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}
