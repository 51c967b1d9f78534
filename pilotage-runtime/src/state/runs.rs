//! Run records (Part II §6.6, §8) and the bounded in-memory store of `"session"` retention
//! (duration retention keeps them in the deployment's [`SharedState`](super::SharedState)).

use std::collections::{HashMap, VecDeque};
use std::mem::size_of;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::engine::memory::{block, value_memory};
use crate::model::declaration::TraceLevel;
use crate::model::outcome::Outcome;
use crate::model::trace::{present, render_step_ref, TraceStep};

/// A stored Run: the trace envelope as recorded, at the Language's ceiling.
///
/// Its output and steps are kept as their JSON text ([`RawValue`]), written once when the Run
/// ends: a record is one block of text rather than a tree of values, so keeping it costs one
/// serialisation instead of a copy of every value, it holds about the memory of its text
/// (where a tree of values is several times that), evicting it frees one block, and a store
/// that writes it out copies the text as it is. A trace fetch reads it back
/// ([`RunRecord::steps`], [`RunRecord::output`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    /// The Run.
    pub run_id: String,
    /// The caller that ran it (fetches by others are `not_found`).
    pub owner: String,
    /// The Language.
    pub language: String,
    /// Outcome.
    pub outcome: Outcome,
    /// Output, where retained, as its JSON text.
    #[serde(default, deserialize_with = "present")]
    pub output: Option<Box<RawValue>>,
    /// Level recorded.
    pub level: TraceLevel,
    /// Steps at the recorded level: the JSON text of their array.
    pub steps: Box<RawValue>,
    /// Statistics.
    pub stats: Option<Value>,
}

/// A record equals another when they hold the same text.
impl PartialEq for RunRecord {
    fn eq(&self, other: &Self) -> bool {
        fn text(t: &Option<Box<RawValue>>) -> Option<&str> {
            t.as_deref().map(RawValue::get)
        }
        self.run_id == other.run_id
            && self.owner == other.owner
            && self.language == other.language
            && self.outcome == other.outcome
            && text(&self.output) == text(&other.output)
            && self.level == other.level
            && self.steps.get() == other.steps.get()
            && self.stats == other.stats
    }
}

impl RunRecord {
    /// The JSON text of `steps` rendered at `level` (as
    /// [`render_steps`](crate::model::trace::render_steps) renders them), written from the steps
    /// in place: only a step that rendering changes is copied.
    ///
    /// ```
    /// use pilotage_runtime::model::declaration::TraceLevel;
    /// use pilotage_runtime::model::outcome::Outcome;
    /// use pilotage_runtime::model::trace::TraceStep;
    /// use pilotage_runtime::state::runs::RunRecord;
    ///
    /// let step = TraceStep {
    ///     id: "s1".into(), calls: None, input: Some(serde_json::json!({"a": 1})),
    ///     output: Some(serde_json::json!([1, 2])), outcome: Outcome::success(), t_ms: None,
    ///     decisions: None,
    /// };
    /// let full = RunRecord::steps_text(std::slice::from_ref(&step), TraceLevel::Full);
    /// let outcome = r#"{"ok":true,"status":"success","error":null}"#;
    /// let expected = format!(r#"[{{"id":"s1","input":{{"a":1}},"output":[1,2],"outcome":{outcome}}}]"#);
    /// assert_eq!(full.get(), expected);
    /// let summary = RunRecord::steps_text(&[step], TraceLevel::Summary);
    /// assert!(!summary.get().contains("input"));
    /// ```
    pub fn steps_text(steps: &[TraceStep], level: TraceLevel) -> Box<RawValue> {
        text_of(&Rendered { steps, level })
    }

    /// The JSON text of `value`.
    pub fn text(value: &Value) -> Box<RawValue> {
        text_of(value)
    }

    /// The recorded steps, read back from their text; an error where the text is not an array
    /// of steps (a store that answered something it was not given).
    pub fn steps(&self) -> Result<Vec<TraceStep>, serde_json::Error> {
        serde_json::from_str(self.steps.get())
    }

    /// The recorded output, read back from its text.
    pub fn output(&self) -> Result<Option<Value>, serde_json::Error> {
        self.output.as_deref().map(|t| serde_json::from_str(t.get())).transpose()
    }

    /// Bytes this record holds in memory: its own fields, every string, the text of its output
    /// and steps, and its statistics counted as [`value_memory`] counts them. What the in-memory
    /// store bounds, so that its bound is resident memory.
    ///
    /// ```
    /// use pilotage_runtime::model::declaration::TraceLevel;
    /// use pilotage_runtime::model::outcome::Outcome;
    /// use pilotage_runtime::state::runs::RunRecord;
    ///
    /// let record = |output: Option<&serde_json::Value>| RunRecord {
    ///     run_id: "run_1".into(), owner: "o".into(), language: "l/v1".into(),
    ///     outcome: Outcome::success(), output: output.map(RunRecord::text), level: TraceLevel::Full,
    ///     steps: RunRecord::steps_text(&[], TraceLevel::Full), stats: None,
    /// };
    /// let rows = serde_json::json!([{"id": 1, "name": "customer 1"}, {"id": 2, "name": "customer 2"}]);
    /// let text = serde_json::to_string(&rows).unwrap().len();
    /// let grown = record(Some(&rows)).memory() - record(None).memory();
    /// assert!(grown >= text && grown <= text + 64, "{grown} bytes in memory for {text} of text");
    /// ```
    pub fn memory(&self) -> usize {
        let text = |s: &str| block(s.len());
        size_of::<RunRecord>()
            + text(&self.run_id)
            + text(&self.owner)
            + text(&self.language)
            + self.outcome.error().map_or(0, text)
            + self.output.as_deref().map_or(0, |t| text(t.get()))
            + text(self.steps.get())
            + self.stats.as_ref().map_or(0, value_memory)
    }
}

/// Steps written as [`render_step_ref`] renders them at `level`, one at a time as they are
/// serialised: nothing is collected first.
struct Rendered<'a> {
    steps: &'a [TraceStep],
    level: TraceLevel,
}

impl Serialize for Rendered<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.steps.iter().map(|s| render_step_ref(s, self.level)))
    }
}

/// The JSON text of `value` (`null` where it cannot be written, which steps and JSON values
/// never are).
fn text_of<T: Serialize + ?Sized>(value: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_default()
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
    /// charged what a copy of it allocates, within a factor of two: about its text, where the
    /// same output and steps as values held more than five times it.
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
            output: Some(RunRecord::text(&rows)),
            level: crate::model::declaration::TraceLevel::Full,
            steps: RunRecord::steps_text(&[step(1), step(2)], crate::model::declaration::TraceLevel::Full),
            stats: Some(json!({"queued_ms": 2})),
        };
        let (held, copy) = crate::engine::memory::tests::held_by(|| record.clone());
        let real = held + size_of::<RunRecord>();
        let charged = copy.memory();
        let text = serde_json::to_string(&copy).map_or(0, |t| t.len());
        assert!(charged <= 2 * real && real <= 2 * charged, "charged {charged}, real {real}, text {text}");
        assert!(text <= charged && charged <= text + text / 10, "charged {charged}, text {text}");
        let as_values = crate::engine::memory::value_memory(&rows) * 3;
        assert!(as_values > 5 * charged, "as values {as_values}, charged {charged}");
    }
}
