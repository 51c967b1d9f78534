//! Idempotency keys (Part II §6.5.6, Part IV §8): the same key with the same runnable and input
//! is one execution; the key is claimed atomically before execution, so concurrent duplicates
//! run the program once and all receive the first Run's recorded response.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::model::execution::ExecuteResponse;

enum Slot {
    Pending { fingerprint: String, done: watch::Receiver<()> },
    Done { fingerprint: String, response: Box<ExecuteResponse>, until: Instant },
}

/// The key table of one server. Keys are scoped per caller, so one caller's key can never
/// replay another caller's result.
#[derive(Default)]
pub(crate) struct Idempotency {
    slots: Mutex<HashMap<(String, String), Slot>>,
}

/// What a claim found.
pub(crate) enum Claim<'a> {
    /// First use: execute, then [`Guard::record`] (started Runs) or drop (refusals).
    Fresh(Guard<'a>),
    /// The recorded response of the first Run.
    Replay(Box<ExecuteResponse>),
    /// The key was used with a different runnable or input.
    Conflict,
}

/// A pending claim; dropping it without recording releases the key.
pub(crate) struct Guard<'a> {
    table: &'a Idempotency,
    key: (String, String),
    fingerprint: String,
    _done: watch::Sender<()>,
    recorded: bool,
}

impl Idempotency {
    /// Claim `key` of `caller` for a request whose runnable and input hash to `fingerprint`.
    pub async fn claim(&self, caller: &str, key: &str, fingerprint: String) -> Claim<'_> {
        let k = (caller.to_owned(), key.to_owned());
        loop {
            let mut wait = {
                let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
                forget_expired(&mut slots);
                match slots.get(&k) {
                    Some(Slot::Done { fingerprint: f, response, until }) if *until > Instant::now() => {
                        return if *f == fingerprint {
                            Claim::Replay(response.clone())
                        } else {
                            Claim::Conflict
                        };
                    }
                    Some(Slot::Pending { fingerprint: f, done }) => {
                        if *f != fingerprint {
                            return Claim::Conflict;
                        }
                        done.clone()
                    }
                    _ => {
                        let (tx, rx) = watch::channel(());
                        slots.insert(k.clone(), Slot::Pending { fingerprint: fingerprint.clone(), done: rx });
                        return Claim::Fresh(Guard {
                            table: self,
                            key: k,
                            fingerprint,
                            _done: tx,
                            recorded: false,
                        });
                    }
                }
            };
            // The first request is still running: wait until it records or releases.
            let _ = wait.changed().await;
        }
    }
}

/// Past this many keys, every claim first forgets the keys whose window has passed.
const SWEEP_ABOVE: usize = 1_024;

fn forget_expired(slots: &mut HashMap<(String, String), Slot>) {
    if slots.len() > SWEEP_ABOVE {
        let now = Instant::now();
        slots.retain(|_, slot| !matches!(slot, Slot::Done { until, .. } if *until <= now));
    }
}

impl Idempotency {
    /// How many keys are held (pending or recorded).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.slots.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl Guard<'_> {
    /// Record the response of a started Run for replay during `window`.
    pub fn record(mut self, response: &ExecuteResponse, window: Duration) {
        let until = Instant::now()
            .checked_add(window)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 86_400));
        let mut slots = self.table.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots.insert(
            self.key.clone(),
            Slot::Done { fingerprint: self.fingerprint.clone(), response: Box::new(response.clone()), until },
        );
        self.recorded = true;
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if !self.recorded {
            let mut slots = self.table.slots.lock().unwrap_or_else(|p| p.into_inner());
            if matches!(slots.get(&self.key), Some(Slot::Pending { .. })) {
                slots.remove(&self.key);
            }
        }
        // Dropping the sender wakes every waiter, which then re-reads the table.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::outcome::Outcome;

    fn response() -> ExecuteResponse {
        ExecuteResponse {
            run_id: "run_x".into(),
            outcome: Outcome::success(),
            output: None,
            diagnostics: None,
            trace: None,
        }
    }

    #[tokio::test]
    async fn keys_past_their_window_are_swept_once_the_table_grows() {
        let table = Idempotency::default();
        for i in 0..=SWEEP_ABOVE {
            match table.claim("c", &format!("k{i}"), "f".into()).await {
                Claim::Fresh(guard) => guard.record(&response(), Duration::ZERO),
                _ => panic!("a fresh key"),
            }
        }
        assert_eq!(table.len(), SWEEP_ABOVE + 1);
        let Claim::Fresh(guard) = table.claim("c", "live", "f".into()).await else { panic!("a fresh key") };
        guard.record(&response(), Duration::from_secs(60));
        assert_eq!(table.len(), 1, "every expired key was forgotten, the live one kept");
        assert!(matches!(table.claim("c", "live", "f".into()).await, Claim::Replay(_)));
    }
}
