//! Run records (Part II §6.6, §8) and the bounded in-memory store of `"session"` retention
//! (duration retention keeps them in the deployment's [`SharedState`](super::SharedState)).

use std::collections::{HashMap, VecDeque};
use std::mem::size_of;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::memory::{block, step_memory, value_memory};
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

impl RunRecord {
    /// Bytes this record holds in memory: its own fields, every string and every value it
    /// owns, counted as [`value_memory`] counts them (a value is several times the length of
    /// its JSON text: a row of three short columns is about 45 bytes of text and 470 in
    /// memory). What the in-memory store bounds, so that its bound is resident memory.
    ///
    /// ```
    /// use pilotage_runtime::model::declaration::TraceLevel;
    /// use pilotage_runtime::model::outcome::Outcome;
    /// use pilotage_runtime::state::runs::RunRecord;
    ///
    /// let record = |output| RunRecord {
    ///     run_id: "run_1".into(), owner: "o".into(), language: "l/v1".into(),
    ///     outcome: Outcome::success(), output, level: TraceLevel::Full, steps: vec![], stats: None,
    /// };
    /// let rows = serde_json::json!([{"id": 1, "name": "customer 1"}, {"id": 2, "name": "customer 2"}]);
    /// let text = serde_json::to_string(&rows).unwrap().len();
    /// let grown = record(Some(rows)).memory() - record(None).memory();
    /// assert!(grown > 4 * text, "{grown} bytes in memory for {text} of text");
    /// ```
    pub fn memory(&self) -> usize {
        let text = |s: &str| block(s.len());
        let value = |v: &Option<Value>| v.as_ref().map_or(0, value_memory);
        let steps =
            self.steps.iter().fold(block(self.steps.capacity() * size_of::<TraceStep>()), |sum, step| {
                // The step's entry is in the block above: only what it owns is added.
                sum + step_memory(step) - size_of::<TraceStep>()
            });
        size_of::<RunRecord>()
            + text(&self.run_id)
            + text(&self.owner)
            + text(&self.language)
            + self.outcome.error().map_or(0, text)
            + value(&self.output)
            + value(&self.stats)
            + steps
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
    runs: HashMap<String, (RunRecord, usize, Option<Instant>)>,
    order: VecDeque<String>,
    bytes: usize,
}

impl MemoryRunStore {
    /// A store keeping at most `max_runs` records and `max_bytes` bytes of them, in memory.
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
    /// Keep `record` for `keep_for`, evicting the oldest records past the bounds, its bytes
    /// counted as the memory it holds ([`RunRecord::memory`], and its id kept twice more as the
    /// store's key and order). A record larger than the whole byte bound is kept alone: a Run
    /// whose answer carries a `run_id` of a kept Language has its record kept; the Run's own
    /// budget ([`Limits::max_run_bytes`](crate::engine::Limits::max_run_bytes)) bounds it.
    pub fn put(&self, record: RunRecord, keep_for: Duration) -> Result<(), String> {
        let size = record.memory() + 2 * block(record.run_id.len()) + size_of::<Option<Instant>>();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept run's record (the in-memory store bounds them by [`RunRecord::memory`]) is
    /// charged what a copy of it allocates, within a factor of two, where its text is a tenth.
    #[test]
    fn a_run_record_is_charged_as_the_memory_it_holds() {
        use crate::model::outcome::Outcome;
        use serde_json::json;

        let rows: Value = (1..=1_000)
            .map(|i| json!({"id": i, "name": format!("customer {i}"), "amount": format!("{}.25", i)}))
            .collect();
        let step = |i: usize| TraceStep {
            id: format!("statement_{i}"),
            calls: Some("big".into()),
            input: Some(json!({"sql": "SELECT id, name, amount FROM big ORDER BY id"})),
            output: Some(rows.clone()),
            outcome: Outcome::failure("error", "a message"),
            t_ms: Some(3),
            decisions: None,
        };
        let record = RunRecord {
            run_id: "run_0123456789abcdef".into(),
            owner: "caller".into(),
            language: "sql/postgres".into(),
            outcome: Outcome::success(),
            output: Some(rows.clone()),
            level: crate::model::declaration::TraceLevel::Full,
            steps: vec![step(1), step(2)],
            stats: Some(json!({"queued_ms": 2})),
        };
        let (held, copy) = crate::engine::memory::tests::held_by(|| record.clone());
        let real = held + size_of::<RunRecord>();
        let charged = copy.memory();
        let text = serde_json::to_string(&copy).map_or(0, |t| t.len());
        assert!(charged <= 2 * real && real <= 2 * charged, "charged {charged}, real {real}, text {text}");
        assert!(charged > 5 * text, "charged {charged}, text {text}");
    }
}
