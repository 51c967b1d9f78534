//! Every engine call the operations make: on an engine thread, never on the async workers;
//! within the server-wide cap on concurrent engine calls (a flood queues until its deadline,
//! then is refused); under a deadline and a cancellation signal that reach the engine through
//! [`Bounds`], so a bound stops the work and not only the answer.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use crate::engine::{Bounds, Budget, Limits, Signal};

/// How an engine call ended without a value.
#[derive(Debug)]
pub(crate) enum CallEnd {
    /// No slot freed up before the deadline: the server is saturated.
    Busy,
    /// The deadline passed; the engine was told to stop.
    TimedOut,
    /// The engine panicked.
    Panicked,
}

/// The bounds of one engine call and the slots it waits for.
pub(crate) struct EngineCall {
    pub bounds: Bounds,
    /// The time the call was given.
    pub time: Duration,
    deadline: Instant,
    slots: Arc<Semaphore>,
}

impl EngineCall {
    /// A call bounded by `time` and the byte and diagnostic bounds of `limits`.
    pub fn new(limits: &Limits, time: Duration, slots: &Arc<Semaphore>) -> Self {
        let deadline = Instant::now() + time;
        let bounds = Bounds {
            signal: Signal::until(deadline),
            budget: Budget::new(limits.max_run_bytes),
            max_diagnostics: limits.max_diagnostics,
        };
        EngineCall { bounds, time, deadline, slots: slots.clone() }
    }

    /// Run `f` on an engine thread (see [`super::threads`]) with the bounds installed. The slot
    /// is held until `f` returns, so an engine that ignores its signal still counts against the
    /// cap.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T, CallEnd> {
        let deadline = tokio::time::Instant::from_std(self.deadline);
        // A free slot is taken at once, without arming a timer for the wait.
        let permit = match self.slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => match tokio::time::timeout_at(deadline, self.slots.clone().acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                _ => return Err(CallEnd::Busy),
            },
        };
        let bounds = self.bounds.clone();
        let answer = super::threads::spawn(move || {
            let _entered = bounds.enter();
            let value = f();
            drop(permit);
            value
        });
        match answer.until(deadline).await {
            None => {
                self.bounds.signal.cancel();
                Err(CallEnd::TimedOut)
            }
            Some(Some(value)) => Ok(value),
            Some(None) => Err(CallEnd::Panicked),
        }
    }

    /// Whether the call's deadline has passed.
    pub fn expired(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Run `f` on this task with the bounds installed (inline validation): the deadline holds
    /// only cooperatively.
    pub fn run_inline<T>(&self, f: impl FnOnce() -> T) -> Result<T, CallEnd> {
        let _entered = self.bounds.enter();
        std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|_| CallEnd::Panicked)
    }
}
