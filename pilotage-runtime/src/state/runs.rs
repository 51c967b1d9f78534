//! Run records and where they live (Part II §6.6, §8): the [`RunStore`] trait and the in-memory
//! store of `"session"` retention.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::declaration::TraceLevel;
use crate::model::outcome::Outcome;
use crate::model::trace::{present, TraceStep};

/// A stored Run: the trace envelope as recorded, at the Language's ceiling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The Run.
    pub run_id: String,
    /// The caller that ran it (fetches by others are `not_found`).
    pub owner: String,
    /// The Language.
    pub language: String,
    /// Outcome.
    pub outcome: Outcome,
    /// Output, where retained.
    #[serde(default, deserialize_with = "present")]
    pub output: Option<Value>,
    /// Level recorded.
    pub level: TraceLevel,
    /// Steps at the recorded level.
    pub steps: Vec<TraceStep>,
    /// Statistics.
    pub stats: Option<Value>,
}

/// Where run records live. Implementations must make `put` durable before returning when
/// they claim [`RunStore::durable`].
pub trait RunStore: Send + Sync + 'static {
    /// Store a record, retrievable for at least `keep_for`.
    fn put(&self, record: RunRecord, keep_for: std::time::Duration) -> Result<(), String>;
    /// The record `run_id`, if retained and still within retention.
    fn get(&self, run_id: &str) -> Option<RunRecord>;
    /// Whether records survive a restart (required by ISO 8601 duration retention).
    fn durable(&self) -> bool;
    /// Record the response of the first Run under idempotency `key` (scoped by the caller),
    /// so a replay after a restart returns it. The default keeps nothing.
    fn put_replay(
        &self,
        key: &str,
        fingerprint: &str,
        response: &Value,
        keep_for: std::time::Duration,
    ) -> Result<(), String> {
        let _ = (key, fingerprint, response, keep_for);
        Ok(())
    }
    /// The fingerprint and response recorded under `key`, within its window.
    fn get_replay(&self, key: &str) -> Option<(String, Value)> {
        let _ = key;
        None
    }
}

/// An in-memory store: the right store for `"session"` retention (one per session, so
/// records live exactly as long as the session).
#[derive(Default)]
pub struct MemoryRunStore {
    runs: Mutex<HashMap<String, RunRecord>>,
}

impl RunStore for MemoryRunStore {
    fn put(&self, record: RunRecord, _keep_for: std::time::Duration) -> Result<(), String> {
        let mut runs = self.runs.lock().map_err(|_| "run store poisoned".to_owned())?;
        runs.insert(record.run_id.clone(), record);
        Ok(())
    }
    fn get(&self, run_id: &str) -> Option<RunRecord> {
        self.runs.lock().ok()?.get(run_id).cloned()
    }
    fn durable(&self) -> bool {
        false
    }
}
