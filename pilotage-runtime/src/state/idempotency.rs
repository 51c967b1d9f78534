//! Idempotency keys (Part II §6.5.6, Part IV §8) on any [`SharedState`]: the same key with the
//! same runnable and input is one execution. The key is claimed atomically before execution, so
//! concurrent duplicates (on any replica sharing the store) run the program once; the others
//! wait, within their own deadline, for the first Run's recorded response. The claimant renews
//! its short [`LEASE`] every [`BEAT`] while the Run goes on, so a claimant that vanishes (a
//! killed replica) frees the key within seconds. The response is recorded with the Run's record
//! in one atomic write; when the store cannot take it within the call's bounds, the claim is
//! kept (renewed) and the write retried in the background for the key's window, so a retry
//! never runs the program again and never replays an id that does not resolve.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::runs::RunRecord;
use super::shared::{Claimed, KeptRun, KeyRef, SharedState, StoreError, StoreResult, Tenure};

/// A fresh claim's lease: how long a claim lives past its claimant's last renewal.
pub const LEASE: Duration = Duration::from_secs(3);
/// How often a live claimant renews its claim.
pub const BEAT: Duration = Duration::from_secs(1);

/// What a claim found.
pub(crate) enum Claim {
    /// First use: execute, then [`KeyGuard::record`] (started Runs) or release (refusals).
    Fresh(KeyGuard),
    /// The recorded response of the first Run.
    Replay(Value),
    /// The key was used with a different runnable or input.
    Conflict,
    /// Another request holds the key and did not record before this request's deadline.
    Busy,
}

/// A held claim, renewed in the background while held; dropping it without recording releases
/// the key (in the background).
pub(crate) struct KeyGuard {
    held: Held,
    /// The heartbeat renewing the claim, until it settles.
    beat: Option<tokio::task::JoinHandle<()>>,
    settled: bool,
}

/// The claim itself: the store, the key and the claim's token.
#[derive(Clone)]
struct Held {
    state: Arc<dyn SharedState>,
    owner: String,
    language: String,
    key: String,
    token: String,
}

impl Held {
    fn key_ref(&self) -> KeyRef<'_> {
        KeyRef { owner: &self.owner, language: &self.language, key: &self.key }
    }
}

/// The first pause between two looks at a pending key; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(2);
const MAX_PAUSE: Duration = Duration::from_millis(100);

/// Claim `key` of `owner` in `language` for a request hashing to `fingerprint`, waiting while
/// another request with the same fingerprint holds it, until `deadline` ([`Claim::Busy`]).
pub(crate) async fn claim(
    state: &Arc<dyn SharedState>,
    (owner, language, key): (&str, &str, &str),
    fingerprint: &str,
    deadline: Instant,
) -> StoreResult<Claim> {
    let key_ref = KeyRef { owner, language, key };
    let mut pause = FIRST_PAUSE;
    loop {
        match state.claim_key(key_ref, fingerprint, LEASE).await? {
            Claimed::Fresh(token) => {
                let (owner, language, key) = (owner.to_owned(), language.to_owned(), key.to_owned());
                let held = Held { state: state.clone(), owner, language, key, token };
                let beat = tokio::spawn(heartbeat(held.clone()));
                return Ok(Claim::Fresh(KeyGuard { held, beat: Some(beat), settled: false }));
            }
            Claimed::Replay(response) => return Ok(Claim::Replay(response)),
            Claimed::Conflict => return Ok(Claim::Conflict),
            Claimed::Pending if Instant::now() + pause >= deadline => return Ok(Claim::Busy),
            Claimed::Pending => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_PAUSE);
            }
        }
    }
}

/// Renew `held` every [`BEAT`] until the claim is lost (or the task is aborted when it settles);
/// a failed renewal is tried again at the next beat.
async fn heartbeat(held: Held) {
    loop {
        tokio::time::sleep(BEAT).await;
        match held.state.renew_key(held.key_ref(), &held.token, LEASE).await {
            Ok(Tenure::Held) => {}
            Ok(Tenure::Lost) => return,
            Err(e) => tracing::warn!(error = %e, "could not renew an idempotency claim; trying again"),
        }
    }
}

/// Call `write` until it succeeds or `deadline` would pass before the next try; the last error
/// otherwise. The pause between tries doubles from 20 ms up to 500 ms.
pub(crate) async fn retrying<T, F, Fut>(deadline: Instant, mut write: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = StoreResult<T>>,
{
    let mut pause = Duration::from_millis(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let err = match tokio::time::timeout(left, write()).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(e)) => e,
            Err(_) => StoreError(format!("the store did not answer within {left:?}")),
        };
        if Instant::now() + pause >= deadline {
            return Err(err);
        }
        tracing::warn!(error = %err, "a store write failed; trying again");
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(500));
    }
}

/// What a settled claim recorded.
pub(crate) enum Settled {
    /// The response is recorded (and the run kept with it).
    Recorded,
    /// Another request took the key over (this claim was presumed dead): nothing was written.
    Lost,
}

impl KeyGuard {
    /// Record the response of a started Run for replay during `window`, with its record `run`
    /// where it is kept, retrying until `deadline`. When the store does not take it in time, the
    /// claim stays held (renewed) and the write goes on in the background for `window` at most,
    /// so that a retry waits for it instead of running the program again; the error says so.
    pub async fn record(
        mut self,
        response: Value,
        window: Duration,
        run: Option<(RunRecord, Duration)>,
        deadline: Instant,
    ) -> StoreResult<Settled> {
        let held = self.held.clone();
        let write = || {
            let kept = run.as_ref().map(|(record, keep_for)| KeptRun { record, keep_for: *keep_for });
            held.state.record_key(held.key_ref(), &held.token, &response, window, kept)
        };
        match retrying(deadline, write).await {
            Ok(tenure) => {
                self.stop();
                Ok(match tenure {
                    Tenure::Held => Settled::Recorded,
                    Tenure::Lost => Settled::Lost,
                })
            }
            Err(e) => {
                self.settled = true;
                let beat = self.beat.take();
                tokio::spawn(settle_later(self.held.clone(), beat, (response, window, run)));
                Err(e)
            }
        }
    }

    /// Settled: no more renewals, nothing to release on drop.
    fn stop(&mut self) {
        self.settled = true;
        if let Some(beat) = self.beat.take() {
            beat.abort();
        }
    }

    /// Give the key back now, nothing recorded under it, so that a retry sent right after the
    /// answer finds it free (dropping the guard releases it too, but in the background).
    pub async fn release(mut self) {
        self.stop();
        release_claim(&self.held).await;
    }
}

/// Keep trying to record `response` (and its run) under `held` every few seconds, for `window` at
/// most, while `beat` keeps the claim; then give the claim back.
async fn settle_later(
    held: Held,
    beat: Option<tokio::task::JoinHandle<()>>,
    (response, window, run): (Value, Duration, Option<(RunRecord, Duration)>),
) {
    let end = Instant::now() + window;
    let mut pause = BEAT;
    while Instant::now() < end {
        tokio::time::sleep(pause).await;
        let kept = run.as_ref().map(|(record, keep_for)| KeptRun { record, keep_for: *keep_for });
        match held.state.record_key(held.key_ref(), &held.token, &response, window, kept).await {
            Ok(_) => {
                beat.inspect(tokio::task::JoinHandle::abort);
                return;
            }
            Err(e) => tracing::warn!(error = %e, "could not record an idempotency key yet; trying again"),
        }
        pause = (pause * 2).min(Duration::from_secs(30));
    }
    beat.inspect(tokio::task::JoinHandle::abort);
    tracing::error!("gave up recording an idempotency key at the end of its window");
    release_claim(&held).await;
}

/// Release the claim `held`; a store failure leaves it to lapse with its lease.
async fn release_claim(held: &Held) {
    if let Err(e) = held.state.release_key(held.key_ref(), &held.token).await {
        tracing::warn!(error = %e, "could not release an idempotency claim; it lapses with its lease");
    }
}

impl Drop for KeyGuard {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        self.stop();
        let held = self.held.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move { release_claim(&held).await });
            }
            Err(_) => tracing::warn!("no runtime to release an idempotency claim; it lapses with its lease"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::MemoryState;

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    #[tokio::test]
    async fn a_dropped_claim_is_released_and_a_recorded_one_replays() {
        let state: Arc<dyn SharedState> = Arc::new(MemoryState::default());
        let id = ("c", "l/v1", "k");
        let Claim::Fresh(guard) = claim(&state, id, "f", soon()).await.unwrap() else {
            panic!("a fresh key")
        };
        drop(guard);
        tokio::task::yield_now().await;
        let Claim::Fresh(guard) = claim(&state, id, "f", soon()).await.unwrap() else {
            panic!("released: fresh again")
        };
        let response = serde_json::json!({"run_id": "run_1"});
        let settled = guard.record(response.clone(), Duration::from_secs(60), None, soon()).await.unwrap();
        assert!(matches!(settled, Settled::Recorded));
        match claim(&state, id, "f", soon()).await.unwrap() {
            Claim::Replay(v) => assert_eq!(v, response),
            _ => panic!("a replay"),
        }
        assert!(matches!(claim(&state, id, "g", soon()).await.unwrap(), Claim::Conflict));
    }

    #[tokio::test]
    async fn a_duplicate_is_answered_by_its_deadline_while_the_claim_is_held() {
        let state: Arc<dyn SharedState> = Arc::new(MemoryState::default());
        let id = ("c", "l/v1", "k");
        let Claim::Fresh(guard) = claim(&state, id, "f", soon()).await.unwrap() else {
            panic!("a fresh key")
        };
        let started = Instant::now();
        let waited = claim(&state, id, "f", started + Duration::from_millis(300)).await.unwrap();
        assert!(matches!(waited, Claim::Busy), "still held by its claimant");
        assert!(
            Instant::now() - started <= Duration::from_millis(300),
            "answered by the duplicate's deadline"
        );
        drop(guard);
        tokio::task::yield_now().await;
        assert!(matches!(claim(&state, id, "f", soon()).await.unwrap(), Claim::Fresh(_)), "released");
    }
}
