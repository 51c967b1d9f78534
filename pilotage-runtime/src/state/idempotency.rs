//! Idempotency keys (Part II §6.5.6, Part IV §8) on any [`SharedState`]: the same key with the
//! same runnable and input is one execution. The key is claimed atomically before execution, so
//! concurrent duplicates (on any replica sharing the store) run the program once; the others
//! wait for the first Run's recorded response. A claimant that vanishes (a killed replica)
//! holds the key only until its lease passes; then the next duplicate runs.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::shared::{Claimed, KeyRef, SharedState, StoreResult};

/// What a claim found.
pub(crate) enum Claim {
    /// First use: execute, then [`KeyGuard::record`] (started Runs) or drop (refusals).
    Fresh(KeyGuard),
    /// The recorded response of the first Run.
    Replay(Value),
    /// The key was used with a different runnable or input.
    Conflict,
}

/// A held claim; dropping it without recording releases the key (in the background).
pub(crate) struct KeyGuard {
    state: Arc<dyn SharedState>,
    owner: String,
    language: String,
    key: String,
    token: String,
    recorded: bool,
}

/// The first pause between two looks at a pending key; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(2);
const MAX_PAUSE: Duration = Duration::from_millis(100);

/// Claim `key` of `owner` in `language` for a request hashing to `fingerprint`, waiting while
/// another request with the same fingerprint holds it. A fresh claim is held for `lease` at
/// most: the longest the first request may take before it records.
pub(crate) async fn claim(
    state: &Arc<dyn SharedState>,
    (owner, language, key): (&str, &str, &str),
    fingerprint: &str,
    lease: Duration,
) -> StoreResult<Claim> {
    let key_ref = KeyRef { owner, language, key };
    let mut pause = FIRST_PAUSE;
    loop {
        match state.claim_key(key_ref, fingerprint, lease).await? {
            Claimed::Fresh(token) => {
                return Ok(Claim::Fresh(KeyGuard {
                    state: state.clone(),
                    owner: owner.to_owned(),
                    language: language.to_owned(),
                    key: key.to_owned(),
                    token,
                    recorded: false,
                }))
            }
            Claimed::Replay(response) => return Ok(Claim::Replay(response)),
            Claimed::Conflict => return Ok(Claim::Conflict),
            Claimed::Pending => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_PAUSE);
            }
        }
    }
}

impl KeyGuard {
    fn key_ref(&self) -> KeyRef<'_> {
        KeyRef { owner: &self.owner, language: &self.language, key: &self.key }
    }

    /// Record the response of a started Run for replay during `window`.
    pub async fn record(mut self, response: &Value, window: Duration) -> StoreResult<()> {
        self.recorded = true;
        self.state.record_key(self.key_ref(), &self.token, response, window).await
    }

    /// Give the key back now, nothing recorded under it, so that a retry sent right after the
    /// answer finds it free (dropping the guard releases it too, but in the background).
    pub async fn release(mut self) {
        self.recorded = true;
        release_claim(&*self.state, self.key_ref(), &self.token).await;
    }
}

/// Release the claim `token` holds on `key_ref`; a store failure leaves it to lapse with its lease.
async fn release_claim(state: &dyn SharedState, key_ref: KeyRef<'_>, token: &str) {
    if let Err(e) = state.release_key(key_ref, token).await {
        tracing::warn!(error = %e, "could not release an idempotency claim; it lapses with its lease");
    }
}

impl Drop for KeyGuard {
    fn drop(&mut self) {
        if self.recorded {
            return;
        }
        let state = self.state.clone();
        let (owner, language, key, token) = (
            std::mem::take(&mut self.owner),
            std::mem::take(&mut self.language),
            std::mem::take(&mut self.key),
            std::mem::take(&mut self.token),
        );
        let release = async move {
            release_claim(&*state, KeyRef { owner: &owner, language: &language, key: &key }, &token).await;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(release);
            }
            Err(_) => tracing::warn!("no runtime to release an idempotency claim; it lapses with its lease"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::MemoryState;

    #[tokio::test]
    async fn a_dropped_claim_is_released_and_a_recorded_one_replays() {
        let state: Arc<dyn SharedState> = Arc::new(MemoryState::default());
        let id = ("c", "l/v1", "k");
        let Claim::Fresh(guard) = claim(&state, id, "f", Duration::from_secs(60)).await.unwrap() else {
            panic!("a fresh key")
        };
        drop(guard);
        tokio::task::yield_now().await;
        let Claim::Fresh(guard) = claim(&state, id, "f", Duration::from_secs(60)).await.unwrap() else {
            panic!("released: fresh again")
        };
        guard.record(&serde_json::json!({"run_id": "run_1"}), Duration::from_secs(60)).await.unwrap();
        match claim(&state, id, "f", Duration::from_secs(60)).await.unwrap() {
            Claim::Replay(v) => assert_eq!(v, serde_json::json!({"run_id": "run_1"})),
            _ => panic!("a replay"),
        }
        assert!(matches!(claim(&state, id, "g", Duration::from_secs(60)).await.unwrap(), Claim::Conflict));
    }
}
