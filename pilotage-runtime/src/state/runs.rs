//! Run records (Part II §6.6, §8) and the bounded in-memory store of `"session"` retention
//! (duration retention keeps them in the deployment's [`SharedState`](super::SharedState)).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
    runs: HashMap<String, (RunRecord, usize, Option<Instant>)>,
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

impl MemoryRunStore {
    /// Keep `record` for `keep_for` (evicting the oldest records past the bounds).
    pub fn put(&self, record: RunRecord, keep_for: Duration) -> Result<(), String> {
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
            if let Some((_, n, _)) = held.runs.remove(&oldest) {
                held.bytes -= n;
            }
        }
        held.order.push_back(record.run_id.clone());
        held.bytes += size;
        let until = Instant::now().checked_add(keep_for);
        if let Some((_, replaced, _)) = held.runs.insert(record.run_id.clone(), (record, size, until)) {
            held.bytes -= replaced;
        }
        Ok(())
    }

    /// The record `run_id`, while within its retention.
    pub fn get(&self, run_id: &str) -> Option<RunRecord> {
        let held = self.held.lock().ok()?;
        let (record, _, until) = held.runs.get(run_id)?;
        until.is_none_or(|u| u > Instant::now()).then(|| record.clone())
    }
}
