//! Every engine call the operations make: on an engine thread, never on the async workers;
//! within the server's engine slots, shared fairly between callers ([`super::slots`]: a flood
//! queues until its wait bound, then is refused); under a deadline and a cancellation signal
//! that reach the engine through [`Bounds`], so a bound stops the work and not only the answer.
//!
//! The wait for a slot and the call's own time are two bounds: the call's clock starts when it
//! gets its slot, so a call that queued still has all its time. A call waits as long as its own
//! time bound, or, inside [`waiting_until`] (a task), until that deadline.
//!
//! Time spent waiting is counted per request ([`queue_counted`]): the caller sees it (the
//! result's `_meta`, a run's `trace.stats.queued_ms`) and the engine reads it from its
//! [`Signal`](crate::engine::Signal::queued).

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::slots::{Full, LaneKind, Slots};
use super::threads::Work;
use crate::engine::{Bounds, Budget, Limits, Signal};

tokio::task_local! {
    /// How long the engine calls of this task may wait for a slot, when longer than their own
    /// time bound (see [`waiting_until`]).
    static WAIT_UNTIL: tokio::time::Instant;
    /// Microseconds the engine calls of this task waited for their slots (see [`queue_counted`]).
    static QUEUED: Arc<AtomicU64>;
}

/// Run `work` (one request), counting the time its engine calls wait for a slot and the waits
/// its engine reports ([`add_queued`]); with the total.
///
/// A plain function over `work`'s future, not an `async fn`: an `async fn` holds the future it
/// is given twice (as its argument and as what it awaits), and a request's future is copied
/// whole several times on its way (`tests/it/request_futures.rs`).
pub(crate) fn queue_counted<T>(
    work: impl std::future::Future<Output = T>,
) -> impl std::future::Future<Output = (T, Duration)> {
    use futures::FutureExt;
    let total = Arc::new(AtomicU64::new(0));
    QUEUED
        .scope(total.clone(), work)
        .map(move |out| (out, Duration::from_micros(total.load(Ordering::Relaxed))))
}

/// Add `waited` to this request's queue time; the request's total so far (`None` outside
/// [`queue_counted`]).
pub(crate) fn add_queued(waited: Duration) -> Option<Duration> {
    let micros = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
    QUEUED
        .try_with(|q| Duration::from_micros(q.fetch_add(micros, Ordering::Relaxed).saturating_add(micros)))
        .ok()
}

/// Run `work` with its engine calls waiting for a slot until `until` (when later than their
/// own bound): for a task, which waits for a slot within its time to live instead of failing.
///
/// A plain function, as [`queue_counted`] is, for the same reason.
pub(crate) fn waiting_until<T>(
    until: tokio::time::Instant,
    work: impl std::future::Future<Output = T>,
) -> impl std::future::Future<Output = T> {
    WAIT_UNTIL.scope(until, work)
}

/// How an engine call ended without a value.
#[derive(Debug)]
pub(crate) enum CallEnd {
    /// No slot freed up within the wait bound (which it names).
    Busy(Full, Duration),
    /// The deadline passed; the engine was told to stop.
    TimedOut,
    /// The engine panicked.
    Panicked,
}

/// Who makes an engine call and which slots it uses.
#[derive(Clone)]
pub(crate) struct Lane {
    pub slots: Arc<Slots>,
    pub caller: Arc<str>,
    pub kind: LaneKind,
}

/// The bounds of one engine call and the slots it waits for.
pub(crate) struct EngineCall {
    pub bounds: Bounds,
    /// The time the call was given, from the moment it got its slot.
    pub time: Duration,
    lane: Lane,
    work: Work,
}

impl EngineCall {
    /// A call of kind `work` bounded by `time` (from when it gets a slot of `lane`) and the byte
    /// and diagnostic bounds of `limits`.
    pub fn new(work: Work, limits: &Limits, time: Duration, lane: Lane) -> Self {
        let bounds = Bounds {
            signal: Signal::unbounded(),
            budget: Budget::new(limits.max_run_bytes),
            max_diagnostics: limits.max_diagnostics,
        };
        EngineCall { bounds, time, lane, work }
    }

    /// Run `f` on an engine thread (see [`super::threads`]) with the bounds installed, once a
    /// slot is free. The slot is held until `f` returns, so an engine that ignores its signal
    /// still counts against the cap.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T, CallEnd> {
        let asked = tokio::time::Instant::now();
        let own = asked + self.time;
        let until = WAIT_UNTIL.try_with(|t| *t).map_or(own, |t| t.max(own));
        let held = match self.lane.slots.take(self.lane.kind, &self.lane.caller, until).await {
            Ok(held) => held,
            Err(full) => return Err(CallEnd::Busy(full, until - asked)),
        };
        let waited = asked.elapsed();
        self.bounds.signal.start_after(self.time, add_queued(waited).unwrap_or(waited));
        let deadline = self.bounds.signal.deadline().map_or(own, tokio::time::Instant::from_std);
        let bounds = self.bounds.clone();
        let answer = super::threads::spawn(self.work, move || {
            let _entered = bounds.enter();
            let value = f();
            drop(held);
            value
        });
        let ended = match answer.until(deadline).await {
            None => {
                self.bounds.signal.cancel();
                Err(CallEnd::TimedOut)
            }
            Some(Some(value)) => Ok(value),
            Some(None) => Err(CallEnd::Panicked),
        };
        self.count_reported();
        ended
    }

    /// What the engine reported waiting for during the call ([`Signal::waited`]) joins the
    /// request's queue time.
    fn count_reported(&self) {
        let reported = self.bounds.signal.reported();
        if !reported.is_zero() {
            add_queued(reported);
        }
    }

    /// Whether the call's deadline has passed (never before the call started).
    pub fn expired(&self) -> bool {
        self.bounds.signal.deadline().is_some_and(|d| Instant::now() >= d)
    }

    /// Run `f` on this task with the bounds installed (inline validation): no slot is taken,
    /// and the deadline holds only cooperatively.
    pub fn run_inline<T>(&self, f: impl FnOnce() -> T) -> Result<T, CallEnd> {
        self.bounds.signal.start(self.time);
        let _entered = self.bounds.enter();
        let ended = std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|_| CallEnd::Panicked);
        self.count_reported();
        ended
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::time::Instant;

    use crate::engine::Limits;
    use crate::ops::call::{add_queued, queue_counted, waiting_until, CallEnd, EngineCall, Lane};
    use crate::ops::slots::{Full, LaneKind, Slots};
    use crate::ops::threads::Work;

    fn call(slots: &Arc<Slots>, caller: &str, ms: u64) -> EngineCall {
        let lane = Lane { slots: slots.clone(), caller: Arc::from(caller), kind: LaneKind::Engine };
        EngineCall::new(Work::Tool, &Limits::default(), Duration::from_millis(ms), lane)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_that_waited_for_its_slot_still_has_its_whole_time() {
        let slots = Arc::new(Slots::new(1, 1));
        let held = slots.take(LaneKind::Engine, "a", Instant::now() + Duration::from_secs(1)).await.unwrap();
        let release = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            drop(held);
        });
        // Waits ~300 ms of its 400, then works 250 ms: more than 400 in all, within each bound.
        let queued = call(&slots, "b", 400);
        let worked = queued.run(|| std::thread::sleep(Duration::from_millis(250))).await;
        assert!(worked.is_ok(), "{worked:?}");
        assert!(!queued.expired());
        release.await.unwrap();
        // Both sides: the same work in 200 ms is cut off at its bound.
        let short = call(&slots, "b", 200);
        let cut = short.run(|| std::thread::sleep(Duration::from_millis(400))).await;
        assert!(matches!(cut, Err(CallEnd::TimedOut)), "{cut:?}");
        assert!(short.expired());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_request_counts_the_waits_of_its_calls_and_the_engine_sees_them() {
        let slots = Arc::new(Slots::new(1, 1));
        let held = slots.take(LaneKind::Engine, "a", Instant::now() + Duration::from_secs(1)).await.unwrap();
        let release = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            drop(held);
        });
        let (seen, total) = queue_counted(async {
            let first = call(&slots, "b", 1000);
            let seen = first.run(|| crate::engine::Signal::current().queued()).await.unwrap();
            // A second call that finds its slot free adds next to nothing (microseconds); what
            // the engine reports is added as it is.
            let second = call(&slots, "b", 1000);
            let again = second.run(|| crate::engine::Signal::current().queued()).await.unwrap();
            assert!(again >= seen && again - seen < Duration::from_millis(5), "{seen:?} then {again:?}");
            assert_eq!(add_queued(Duration::from_millis(5)), Some(again + Duration::from_millis(5)));
            again
        })
        .await;
        release.await.unwrap();
        assert!(seen >= Duration::from_millis(150) && seen < Duration::from_millis(1000), "{seen:?}");
        assert_eq!(total, seen + Duration::from_millis(5));
        // Outside a request nothing is counted.
        assert_eq!(add_queued(Duration::from_millis(5)), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wait_has_its_own_bound_which_a_task_extends() {
        let slots = Arc::new(Slots::new(1, 1));
        let held = slots.take(LaneKind::Engine, "a", Instant::now() + Duration::from_secs(1)).await.unwrap();
        let refused = call(&slots, "b", 100).run(|| ()).await;
        match refused {
            Err(CallEnd::Busy(full, waited)) => {
                assert_eq!((full, waited), (Full::Server { slots: 1 }, Duration::from_millis(100)));
            }
            other => panic!("{other:?}"),
        }
        // Inside a task's scope the same call waits for the slot past its own bound.
        let release = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            drop(held);
        });
        let until = Instant::now() + Duration::from_secs(5);
        let waited = waiting_until(until, async { call(&slots, "b", 100).run(|| 7).await }).await;
        assert_eq!(waited.ok(), Some(7));
        release.await.unwrap();
    }
}
