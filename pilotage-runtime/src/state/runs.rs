//! Run records and where they live (Part II §6.6, §8): the [`RunStore`] trait and the in-memory
//! store of `"session"` retention.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::call::json_size;
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

/// An in-memory store: the right store for `"session"` retention (one per session and
/// Language, so records live exactly as long as the session). Bounded: past
/// [`Limits::max_retained_runs`](crate::engine::Limits::max_retained_runs) records or
/// [`Limits::max_retained_bytes`](crate::engine::Limits::max_retained_bytes) bytes the oldest
/// records are evicted (a fetch of an evicted run is `not_found`, which retention allows).
pub struct MemoryRunStore {
    max_runs: usize,
    max_bytes: usize,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    runs: HashMap<String, (RunRecord, usize)>,
    order: VecDeque<String>,
    bytes: usize,
}

impl MemoryRunStore {
    /// A store keeping at most `max_runs` records and `max_bytes` bytes of them.
    pub fn bounded(max_runs: usize, max_bytes: usize) -> Self {
        MemoryRunStore { max_runs: max_runs.max(1), max_bytes, held: Mutex::default() }
    }

    /// How many records and bytes are held.
    pub fn held(&self) -> (usize, usize) {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        (held.runs.len(), held.bytes)
    }
}

impl Default for MemoryRunStore {
    /// The defaults of [`Limits`](crate::engine::Limits).
    fn default() -> Self {
        let limits = crate::engine::Limits::default();
        Self::bounded(limits.max_retained_runs, limits.max_retained_bytes)
    }
}

impl RunStore for MemoryRunStore {
    fn put(&self, record: RunRecord, _keep_for: std::time::Duration) -> Result<(), String> {
        let size = json_size(&record);
        if size > self.max_bytes {
            return Err(format!(
                "a run record of {size} bytes exceeds the retention bound of {} bytes",
                self.max_bytes
            ));
        }
        let mut held = self.held.lock().map_err(|_| "run store poisoned".to_owned())?;
        while held.runs.len() >= self.max_runs || held.bytes + size > self.max_bytes {
            let Some(oldest) = held.order.pop_front() else { break };
            if let Some((_, n)) = held.runs.remove(&oldest) {
                held.bytes -= n;
            }
        }
        held.order.push_back(record.run_id.clone());
        held.bytes += size;
        if let Some((_, replaced)) = held.runs.insert(record.run_id.clone(), (record, size)) {
            held.bytes -= replaced;
        }
        Ok(())
    }
    fn get(&self, run_id: &str) -> Option<RunRecord> {
        self.held.lock().ok()?.runs.get(run_id).map(|(r, _)| r.clone())
    }
    fn durable(&self) -> bool {
        false
    }
}
