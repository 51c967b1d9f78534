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
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Whether an engine call must stop: cancelled by the runtime (its deadline passed, the client
/// cancelled, the server shuts down) or past its deadline. Cheap to clone and to check.
#[derive(Clone, Debug)]
pub struct Signal(Arc<SignalState>);

#[derive(Debug)]
struct SignalState {
    /// Set once: at creation ([`Signal::until`]), or when the engine call starts.
    deadline: OnceLock<Instant>,
    cancelled: AtomicBool,
    /// Microseconds the request waited for engine slots up to this call's start.
    queued: AtomicU64,
    /// Microseconds the engine reported waiting for its own resources during the call
    /// ([`Signal::waited`]).
    reported: AtomicU64,
}

impl Signal {
    /// A signal that fires at `deadline` or when cancelled.
    pub fn until(deadline: Instant) -> Self {
        let signal = Self::unbounded();
        let _ = signal.0.deadline.set(deadline);
        signal
    }

    /// A signal that fires only when cancelled.
    pub fn unbounded() -> Self {
        Signal(Arc::new(SignalState {
            deadline: OnceLock::new(),
            cancelled: AtomicBool::new(false),
            queued: AtomicU64::new(0),
            reported: AtomicU64::new(0),
        }))
    }

    /// Start the clock of a signal made without a deadline: it fires `time` from now. The
    /// runtime starts an engine call's clock when the call gets its engine slot, so the wait for
    /// a slot does not eat the call's own time. No effect on a signal that has a deadline.
    pub(crate) fn start(&self, time: Duration) {
        let _ = self.0.deadline.set(Instant::now() + time);
    }

    /// Start the clock as [`Signal::start`] does, for a call whose request had waited `queued`
    /// for engine slots by then (this call's own wait included).
    pub(crate) fn start_after(&self, time: Duration, queued: Duration) {
        let micros = u64::try_from(queued.as_micros()).unwrap_or(u64::MAX);
        self.0.queued.store(micros, Ordering::Relaxed);
        self.start(time);
    }

    /// How long the request of this engine call waited for the server's engine slots before
    /// the call began (every earlier call of the request, and this one's own wait): time that
    /// was not the call's. Zero outside an engine call, or when nothing waited.
    pub fn queued(&self) -> Duration {
        Duration::from_micros(self.0.queued.load(Ordering::Relaxed))
    }

    /// Report that this engine call waited `waited` for a resource of the engine's own (a
    /// pooled database connection): the wait joins the request's queue time (the result's
    /// `_meta` `queued_ms`), as the waits for the server's engine slots do, so that a caller
    /// can tell a slow answer from a busy engine. For engine code with no [`Validation`] or
    /// [`Run`] to report on, such as a catalog snapshot or a plain tool; a validation reports
    /// with [`Validation::waited`], a run with [`Run::waited`]. No effect outside an engine call.
    ///
    /// ```
    /// use std::time::Duration;
    /// use pilotage::engine::Signal;
    ///
    /// // In a Language's catalog method, after waiting 12 ms for a pooled connection:
    /// Signal::current().waited(Duration::from_millis(12));
    /// ```
    ///
    /// [`Validation`]: crate::engine::Validation
    /// [`Validation::waited`]: crate::engine::Validation::waited
    /// [`Run`]: crate::engine::Run
    /// [`Run::waited`]: crate::engine::Run::waited
    pub fn waited(&self, waited: Duration) {
        let micros = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        self.0.reported.fetch_add(micros, Ordering::Relaxed);
    }

    /// What the engine reported with [`Signal::waited`].
    pub(crate) fn reported(&self) -> Duration {
        Duration::from_micros(self.0.reported.load(Ordering::Relaxed))
    }

    /// The deadline, once the clock started.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.0.deadline.get().copied()
    }

    /// Fire the signal.
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::Relaxed);
    }

    /// True once cancelled or past the deadline: stop working and return.
    pub fn is_cancelled(&self) -> bool {
        self.is_cancelled_at(Instant::now())
    }

    /// [`Signal::is_cancelled`] at `now`, for a caller that has just read the clock.
    pub(crate) fn is_cancelled_at(&self, now: Instant) -> bool {
        self.0.cancelled.load(Ordering::Relaxed) || self.0.deadline.get().is_some_and(|d| now >= *d)
    }

    /// Time left before the deadline (`None`: no deadline).
    pub fn remaining(&self) -> Option<Duration> {
        self.0.deadline.get().map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// The signal of the engine call running on this thread (unbounded outside one).
    pub fn current() -> Signal {
        CURRENT.with(|c| c.borrow().as_ref().map(|b| b.signal.clone())).unwrap_or_else(Signal::unbounded)
    }
}

/// A count of bytes one engine call may still make the server hold (step inputs and outputs,
/// trace entries, values an engine builds), counted as memory, not as JSON text (see
/// [`Budget::charge_value`]). Shared by clones; once spent, every charge fails.
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

    /// Spend what `v` holds in memory ([`value_memory`](super::memory::value_memory)), not the
    /// length of its text: charge every value the engine builds or copies this way.
    pub fn charge_value(&self, v: &serde_json::Value) -> bool {
        self.charge(super::memory::value_memory(v))
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

#[doc(hidden)] // the runtime's, not an engine author's
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

/// The size of `v`'s compact JSON text (as `serde_json::to_string` writes it), counted by
/// walking the tree: no number is formatted but a float, no string is escaped. The runtime
/// measures programs, step inputs and outputs with it on every call; [`json_size`] measures
/// any other serializable value.
pub fn value_size(v: &serde_json::Value) -> usize {
    measure(v).0
}

/// The size of `v`'s compact JSON text (see [`value_size`]) and its nesting depth (arrays and
/// objects; a scalar is 0), in one walk.
pub(crate) fn measure(v: &serde_json::Value) -> (usize, usize) {
    use serde_json::Value;
    // Members or items and the separators between them, inside their brackets.
    let nested = |count: usize, inner: (usize, usize)| (2 + count.saturating_sub(1) + inner.0, 1 + inner.1);
    let add = |a: (usize, usize), b: (usize, usize)| (a.0 + b.0, a.1.max(b.1));
    match v {
        Value::Null | Value::Bool(true) => (4, 0),
        Value::Bool(false) => (5, 0),
        Value::Number(n) => (number_size(n), 0),
        Value::String(s) => (string_size(s), 0),
        Value::Array(items) => nested(items.len(), items.iter().map(measure).fold((0, 0), add)),
        Value::Object(members) => {
            let each = members.iter().map(|(k, v)| {
                let (size, depth) = measure(v);
                (string_size(k) + 1 + size, depth)
            });
            nested(members.len(), each.fold((0, 0), add))
        }
    }
}

fn number_size(n: &serde_json::Number) -> usize {
    let digits = |u: u64| u.checked_ilog10().map_or(1, |d| d as usize + 1);
    match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => digits(u),
        (None, Some(i)) => 1 + digits(i.unsigned_abs()),
        _ => json_size(n),
    }
}

/// A string's size quoted and escaped as serde_json escapes it: `"` and `\` and the control
/// characters with short escapes take two bytes, the other control characters six.
fn string_size(s: &str) -> usize {
    let escaped = |b: &u8| *b < 0x20 || *b == b'"' || *b == b'\\';
    if !s.as_bytes().iter().any(escaped) {
        return 2 + s.len();
    }
    let extra = |b: u8| match b {
        b'"' | b'\\' | b'\x08' | b'\x0c' | b'\n' | b'\r' | b'\t' => 1,
        0..=0x1f => 5,
        _ => 0,
    };
    2 + s.len() + s.bytes().map(extra).sum::<usize>()
}

pub use crate::model::size::json_size;

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::engine::call::{json_size, measure, value_size};

    /// Nesting depth as the bound counts it: arrays and objects, scalars 0.
    fn depth(v: &Value) -> usize {
        match v {
            Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    #[test]
    fn value_size_is_the_length_of_the_compact_text_and_measure_counts_the_nesting() {
        let controls: String = (0u8..0x20).map(char::from).collect();
        let values = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(9),
            json!(10),
            json!(u64::MAX),
            json!(-1),
            json!(i64::MIN),
            json!(0.5),
            json!(-1.0e-7),
            json!(1e300),
            json!(""),
            json!("plain"),
            json!("quote \" and backslash \\ and / slash"),
            json!(controls),
            json!("\u{7f} é ✓ 𝄞"),
            json!([]),
            json!({}),
            json!([1]),
            json!([1, "two", null, [3, [4, {}]]]),
            json!({"a": 1}),
            json!({"k\"ey\n": {"nested": [true, false, {"x": -0.25}]}, "b": "é"}),
            json!({"steps": (0..50).map(|i| json!({"id": format!("s{i}"), "op": "add", "args": [i, 2]})).collect::<Vec<_>>()}),
        ];
        for v in &values {
            assert_eq!(value_size(v), serde_json::to_string(v).unwrap().len(), "{v}");
            assert_eq!(value_size(v), json_size(v), "{v}");
            assert_eq!(measure(v).1, depth(v), "{v}");
        }
        assert_eq!(measure(&json!([[[]], {"a": {"b": [1]}}])).1, 4);
        // Every single byte value a string can hold, escaped or not.
        for c in (0u32..0x80).filter_map(char::from_u32) {
            let v = Value::String(format!("a{c}b"));
            assert_eq!(value_size(&v), serde_json::to_string(&v).unwrap().len(), "{c:?}");
        }
    }
}
