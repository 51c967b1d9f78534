//! Run records (Part II §6.6, §8) and the bounded in-memory store of `"session"` retention
//! (duration retention keeps them in the deployment's [`SharedState`](super::SharedState)).

use std::collections::VecDeque;
use std::hash::{BuildHasher, RandomState};
use std::mem::size_of;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hashbrown::HashTable;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::engine::memory::block;
use crate::model::declaration::TraceLevel;
use crate::model::outcome::Outcome;
use crate::model::trace::{present, render_step_ref, TraceStep};

/// A stored Run: the trace envelope as recorded, at the Language's ceiling.
///
/// Its output and steps are kept as their JSON text ([`RawValue`]), written once when the Run
/// ends: a record is one block of text rather than a tree of values, so keeping it costs one
/// serialisation instead of a copy of every value, it holds about the memory of its text
/// (where a tree of values is several times that), and a store that writes it out copies the
/// text as it is. A trace fetch reads it back
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
    /// Output, where retained, as its JSON text (none is not written, so that it reads back as
    /// none, and a `null` output as `null`).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
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
///
/// Records are written, as their JSON text, one after another into blocks the store allocates
/// (1 KiB first, each next one twice the last one's size up to [`MAX_BLOCK`], and a record
/// larger than that in a block of its own), and a block is freed when its last record is evicted, oldest first.
/// Holding a record is therefore not holding allocations of its own among the server's
/// short-lived ones, where on the system allocator they leave holes the heap cannot give back:
/// the `sql` example's server (`benches/fair`, 64 sessions that each keep 1,000 Runs) peaked at
/// 281 MB resident this way, 437 MB with each record's own allocations. What the store counts
/// against its byte bound is what it allocates: its blocks, whole, and its entries and index.
///
/// ```
/// use std::time::Duration;
/// use pilotage_runtime::model::declaration::TraceLevel;
/// use pilotage_runtime::model::outcome::Outcome;
/// use pilotage_runtime::state::runs::{MemoryRunStore, RunRecord};
///
/// let record = |id: &str| RunRecord {
///     run_id: id.into(), owner: "o".into(), language: "l/v1".into(), outcome: Outcome::success(),
///     output: Some(RunRecord::text(&serde_json::json!([1, 2]))), level: TraceLevel::Full,
///     steps: RunRecord::steps_text(&[], TraceLevel::Full), stats: None,
/// };
/// let store = MemoryRunStore::bounded(2, 1 << 20);
/// for id in ["run_1", "run_2", "run_3"] {
///     store.put(&record(id), Duration::MAX).unwrap();
/// }
/// assert_eq!(store.get("run_1"), None, "the oldest is evicted past two records");
/// assert_eq!(store.get("run_3"), Some(record("run_3")));
/// assert_eq!(store.held().0, 2);
/// ```
pub struct MemoryRunStore {
    max_runs: usize,
    max_bytes: usize,
    /// Hashes run ids for the index (keyed per process, so no caller can choose collisions).
    hasher: RandomState,
    held: Mutex<Held>,
}

/// The largest block a store writes records into: large enough that a block holds many records
/// of the usual few kilobytes, small enough that a session keeping few runs holds little.
pub const MAX_BLOCK: usize = 256 << 10;

/// A store's first block, unless its byte bound is smaller or its first record larger: small,
/// so that a session that keeps one Run holds about that Run.
const FIRST_BLOCK: usize = 1 << 10;

/// Where one record is written: its run id's bytes, then its JSON text.
struct Entry {
    hash: u64,
    /// The block's number.
    block: u64,
    start: usize,
    id_end: usize,
    end: usize,
    until: Option<Instant>,
}

#[derive(Default)]
struct Held {
    /// Every record written and not evicted, oldest first; `first` is the number of the front.
    entries: VecDeque<Entry>,
    first: u64,
    /// The numbers of the entries not replaced by a later record of the same run id, by their
    /// run id's hash.
    index: HashTable<u64>,
    /// The blocks, oldest first; `first_block` is the number of the front.
    blocks: VecDeque<Vec<u8>>,
    first_block: u64,
    /// The blocks' sizes as allocated ([`block`]), together.
    text: usize,
}

impl Held {
    /// The bytes held, as allocated ([`block`]): the blocks, and the entries, index and list of
    /// blocks.
    fn bytes(&self) -> usize {
        self.text
            + block(self.entries.capacity() * size_of::<Entry>())
            + block(self.index.allocation_size())
            + block(self.blocks.capacity() * size_of::<Vec<u8>>())
    }

    /// Makes room in the entries, index and list of blocks for one more record in a block
    /// (`fresh`: a new one), so that [`Held::bytes`] counts what writing it allocates.
    fn reserve(&mut self, fresh: bool) {
        self.entries.reserve(1);
        if fresh {
            self.blocks.reserve(1);
        }
        let Held { index, entries, first, .. } = self;
        index.reserve(1, |&n| hash_of(entries, *first, n));
    }

    fn entry(&self, number: u64) -> Option<&Entry> {
        nth(&self.entries, self.first, number)
    }

    /// The number of the entry `run_id` (of `hash`) answers to.
    fn find(&self, hash: u64, run_id: &str) -> Option<u64> {
        self.index.find(hash, |&n| self.id_of(n) == Some(run_id.as_bytes())).copied()
    }

    /// The block `entry` is written in.
    fn block_of(&self, entry: &Entry) -> Option<&[u8]> {
        self.blocks.get(usize::try_from(entry.block.checked_sub(self.first_block)?).ok()?).map(Vec::as_slice)
    }

    fn id_of(&self, number: u64) -> Option<&[u8]> {
        let entry = self.entry(number)?;
        self.block_of(entry)?.get(entry.start..entry.id_end)
    }

    /// Evicts the oldest record and frees the blocks no record is written in any more (all of
    /// them when none is left); `false` when none is held.
    fn evict_oldest(&mut self) -> bool {
        let Some(oldest) = self.entries.pop_front() else { return false };
        let number = self.first;
        self.first += 1;
        // Absent where a later record of the same run id replaced it.
        if let Ok(found) = self.index.find_entry(oldest.hash, |&n| n == number) {
            found.remove();
        }
        let in_use = self.entries.front().map_or(u64::MAX, |e| e.block);
        while self.first_block < in_use {
            let Some(freed) = self.blocks.pop_front() else { break };
            self.text -= block(freed.capacity());
            self.first_block += 1;
        }
        true
    }

    /// Takes the record of `run_id`, if any, out of the index: replaced, its text stays written
    /// until the oldest records go past it.
    fn replace(&mut self, hash: u64, run_id: &str) {
        let Some(number) = self.find(hash, run_id) else { return };
        if let Ok(found) = self.index.find_entry(hash, |&n| n == number) {
            found.remove();
        }
    }
}

/// Entry `number` among `entries` whose front is `first`.
fn nth(entries: &VecDeque<Entry>, first: u64, number: u64) -> Option<&Entry> {
    entries.get(usize::try_from(number.checked_sub(first)?).ok()?)
}

/// The hash of entry `number` (what the index rehashes by when it grows).
fn hash_of(entries: &VecDeque<Entry>, first: u64, number: u64) -> u64 {
    nth(entries, first, number).map_or(0, |e| e.hash)
}

impl MemoryRunStore {
    /// A store keeping at most `max_runs` records and `max_bytes` bytes of them, in memory.
    pub fn bounded(max_runs: usize, max_bytes: usize) -> Self {
        MemoryRunStore {
            max_runs: max_runs.max(1),
            max_bytes,
            hasher: RandomState::new(),
            held: Mutex::default(),
        }
    }

    /// How many records are held, and the bytes counted against the bound: the blocks they are
    /// written in, whole, and the store's entries and index as allocated.
    pub fn held(&self) -> (usize, usize) {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        (held.index.len(), held.bytes())
    }

    /// The size of the block written after one of `last` bytes (0: none yet) for a record of
    /// `need` bytes.
    fn block_size(&self, last: usize, need: usize) -> usize {
        last.saturating_mul(2).clamp(FIRST_BLOCK, MAX_BLOCK).min(self.max_bytes / 16).max(need)
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
    /// Keep a copy of `record` for `keep_for` (replacing an earlier record of the same run id),
    /// evicting the oldest records past the bounds. A record larger than the whole byte bound
    /// is kept alone: a Run whose answer carries a `run_id` of a kept Language has its record
    /// kept; the Run's own budget ([`Limits::max_run_bytes`](crate::engine::Limits::max_run_bytes))
    /// bounds it.
    pub fn put(&self, record: &RunRecord, keep_for: Duration) -> Result<(), String> {
        let hash = self.hasher.hash_one(record.run_id.as_str());
        // Written first where it is short-lived, so that its size decides where it goes.
        let mut written = Vec::with_capacity(
            record.steps.get().len() + record.output.as_ref().map_or(0, |o| o.get().len()) + 256,
        );
        serde_json::to_writer(&mut written, record).map_err(|e| e.to_string())?;
        let need = record.run_id.len() + written.len();
        let mut guard = self.held.lock().map_err(|_| "run store poisoned".to_owned())?;
        let held = &mut *guard;
        held.replace(hash, &record.run_id);
        while held.index.len() >= self.max_runs && held.evict_oldest() {}
        let fresh = loop {
            let newest = held.blocks.back();
            let fresh = match newest {
                Some(b) if b.capacity() - b.len() >= need => None,
                _ => Some(self.block_size(newest.map_or(0, Vec::capacity), need)),
            };
            held.reserve(fresh.is_some());
            if held.bytes() + fresh.map_or(0, block) <= self.max_bytes || !held.evict_oldest() {
                break fresh;
            }
        };
        if let Some(size) = fresh {
            held.blocks.push_back(Vec::with_capacity(size));
            held.text += block(size);
        }
        let block = held.first_block + (held.blocks.len() as u64).saturating_sub(1);
        let Some(text) = held.blocks.back_mut() else { return Err("no block to write in".to_owned()) };
        let start = text.len();
        text.extend_from_slice(record.run_id.as_bytes());
        text.extend_from_slice(&written);
        let (id_end, end) = (start + record.run_id.len(), text.len());
        let until = Instant::now().checked_add(keep_for);
        let number = held.first + held.entries.len() as u64;
        held.entries.push_back(Entry { hash, block, start, id_end, end, until });
        let Held { index, entries, first, .. } = &mut *held;
        index.insert_unique(hash, number, |&n| hash_of(entries, *first, n));
        Ok(())
    }

    /// The record `run_id`, while within its retention. Its text is copied out under the lock
    /// and read after it, so that a large record's parse never holds up the session's puts.
    pub fn get(&self, run_id: &str) -> Option<RunRecord> {
        let hash = self.hasher.hash_one(run_id);
        let text = {
            let held = self.held.lock().ok()?;
            let entry = held.entry(held.find(hash, run_id)?)?;
            if entry.until.is_some_and(|u| u <= Instant::now()) {
                return None;
            }
            held.block_of(entry)?.get(entry.id_end..entry.end)?.to_vec()
        };
        serde_json::from_slice(&text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::outcome::Outcome;
    use serde_json::json;

    fn record(id: &str, output: &str) -> RunRecord {
        RunRecord {
            run_id: id.into(),
            owner: "o".into(),
            language: "l/v1".into(),
            outcome: Outcome::success(),
            output: Some(RunRecord::text(&json!(output))),
            level: TraceLevel::Full,
            steps: RunRecord::steps_text(&[], TraceLevel::Full),
            stats: None,
        }
    }

    /// The bytes `record` takes in a block: its run id, then its JSON text.
    fn written(record: &RunRecord) -> usize {
        record.run_id.len() + serde_json::to_string(record).map_or(0, |t| t.len())
    }

    fn ids(store: &MemoryRunStore, ids: &[&str]) -> Vec<bool> {
        ids.iter().map(|id| store.get(id).is_some()).collect()
    }

    /// The records held and the bytes of their blocks, as allocated.
    fn blocks(store: &MemoryRunStore) -> (usize, usize) {
        let held = store.held.lock().unwrap();
        (held.index.len(), held.text)
    }

    #[test]
    fn past_its_count_the_oldest_record_goes() {
        let store = MemoryRunStore::bounded(2, usize::MAX);
        for id in ["r1", "r2", "r3"] {
            store.put(&record(id, ""), Duration::MAX).unwrap();
        }
        assert_eq!(ids(&store, &["r1", "r2", "r3"]), [false, true, true]);
        assert_eq!(blocks(&store), (2, block(FIRST_BLOCK)), "three records written in one block");
        assert_eq!(store.get("r3"), Some(record("r3", "")), "read back as it was kept");
        assert_eq!(store.get("r"), None);
        assert_eq!(store.get(""), None);
    }

    #[test]
    fn records_share_blocks_that_double_and_a_block_goes_with_its_last_record() {
        // 256-byte records: four fit the first block of 1 KiB, eight the next of 2 KiB.
        let sized = |i: usize, size: usize| {
            let id = format!("run_{i:03}");
            let bare = written(&record(&id, ""));
            record(&id, &"x".repeat(size - bare))
        };
        let rec = |i: usize| sized(i, 256);
        assert_eq!(written(&rec(1)), 256);
        let store = MemoryRunStore::bounded(5, usize::MAX);
        for i in 1..=5 {
            store.put(&rec(i), Duration::MAX).unwrap();
        }
        assert_eq!(blocks(&store), (5, block(1_024) + block(2_048)));
        // Records 1 to 3 evicted: the first block still holds record 4.
        for i in 6..=8 {
            store.put(&rec(i), Duration::MAX).unwrap();
        }
        assert_eq!(blocks(&store), (5, block(1_024) + block(2_048)));
        // Record 4 evicted: its block is freed.
        store.put(&rec(9), Duration::MAX).unwrap();
        assert_eq!(blocks(&store), (5, block(2_048)));
        let names: Vec<String> = (1..=9).map(|i| format!("run_{i:03}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(ids(&store, &names), [false, false, false, false, true, true, true, true, true]);
        assert_eq!(store.get("run_009"), Some(rec(9)));
        // A first record larger than the first block: a block of its size.
        let store = MemoryRunStore::bounded(5, usize::MAX);
        store.put(&sized(1, 3_000), Duration::MAX).unwrap();
        assert_eq!(blocks(&store), (1, block(3_000)));
        // The blocks grow to MAX_BLOCK, no further (1,000-byte records).
        let store = MemoryRunStore::bounded(1_000, usize::MAX);
        for i in 0..1_000 {
            store.put(&sized(i, 1_000), Duration::MAX).unwrap();
        }
        let sizes: Vec<usize> = store.held.lock().unwrap().blocks.iter().map(Vec::capacity).collect();
        assert_eq!(
            sizes,
            [
                1 << 10,
                2 << 10,
                4 << 10,
                8 << 10,
                16 << 10,
                32 << 10,
                64 << 10,
                128 << 10,
                256 << 10,
                256 << 10,
                256 << 10
            ]
        );
    }

    #[test]
    fn a_record_of_a_kept_run_id_replaces_it() {
        let store = MemoryRunStore::bounded(2, usize::MAX);
        store.put(&record("r1", "first"), Duration::MAX).unwrap();
        store.put(&record("r2", ""), Duration::MAX).unwrap();
        store.put(&record("r1", "second"), Duration::MAX).unwrap();
        assert_eq!(store.get("r1"), Some(record("r1", "second")));
        assert_eq!(store.get("r2"), Some(record("r2", "")), "a replacement is not one more record");
        assert_eq!(store.held().0, 2);
        // The replaced text stays written until the oldest go past it.
        assert_eq!(store.held.lock().unwrap().entries.len(), 3);
        store.put(&record("r3", ""), Duration::MAX).unwrap();
        assert_eq!(ids(&store, &["r1", "r2", "r3"]), [true, false, true]);
        assert_eq!(store.held.lock().unwrap().entries.len(), 2);
    }

    #[test]
    fn a_record_reads_back_as_it_was_kept() {
        let store = MemoryRunStore::bounded(10, usize::MAX);
        let failed = RunRecord {
            outcome: Outcome::failure("error", "a \"quoted\" message"),
            output: None,
            stats: Some(json!({"queued_ms": 2})),
            level: TraceLevel::Summary,
            ..record("failed", "")
        };
        let null = RunRecord { output: Some(RunRecord::text(&json!(null))), ..record("null", "") };
        for kept in [&failed, &null] {
            store.put(kept, Duration::MAX).unwrap();
            assert_eq!(store.get(&kept.run_id).as_ref(), Some(kept));
        }
        assert_eq!(store.get("null").map(|r| r.output().unwrap()), Some(Some(json!(null))));
        assert_eq!(store.get("failed").map(|r| r.output().unwrap()), Some(None));
    }

    #[test]
    fn a_record_past_its_retention_is_not_answered() {
        let store = MemoryRunStore::bounded(10, usize::MAX);
        store.put(&record("gone", ""), Duration::ZERO).unwrap();
        store.put(&record("kept", ""), Duration::from_secs(3_600)).unwrap();
        assert_eq!(ids(&store, &["gone", "kept"]), [false, true]);
    }

    #[test]
    fn past_its_bytes_the_oldest_records_go_and_a_larger_one_is_kept_alone() {
        // Two records of 1,500 bytes and the store's bookkeeping fit, three do not; the bound
        // is under 16 times a record, so each is written in a block of its own size.
        let r = |id: &str| record(id, &"x".repeat(1_500 - written(&record(id, ""))));
        let max = 2 * 1_500 + 1_024;
        let store = MemoryRunStore::bounded(100, max);
        for id in ["r1", "r2", "r3"] {
            store.put(&r(id), Duration::MAX).unwrap();
            assert!(store.held().1 <= max, "{:?}", store.held());
        }
        assert_eq!(blocks(&store), (2, 2 * block(1_500)));
        assert_eq!(ids(&store, &["r1", "r2", "r3"]), [false, true, true]);
        // A record larger than the whole bound is kept alone (its Run's budget bounded it).
        let large = record("r4", &"x".repeat(10 * max));
        store.put(&large, Duration::MAX).unwrap();
        assert_eq!(ids(&store, &["r2", "r3", "r4"]), [false, false, true]);
        assert_eq!(blocks(&store), (1, block(written(&large))));
        store.put(&r("r5"), Duration::MAX).unwrap();
        assert_eq!(blocks(&store), (1, block(1_500)), "the next record evicts it");
        assert_eq!(ids(&store, &["r4", "r5"]), [false, true]);
    }

    /// Whatever the sizes of the records, the bytes counted stay within the bound and are what
    /// the store allocates (its blocks, entries and index), and the newest record is always kept
    /// whole.
    #[test]
    fn the_bytes_counted_are_what_the_store_allocates_within_its_bound() {
        let max = 256 << 10;
        let (allocated, store) = crate::engine::memory::tests::held_by(|| {
            let store = MemoryRunStore::bounded(1_000, max);
            for i in 0..3_000usize {
                let id = format!("run_{i}");
                let kept = record(&id, &"y".repeat(i * 7_919 % 3_000));
                store.put(&kept, Duration::MAX).unwrap();
                assert_eq!(store.get(&id), Some(kept), "record {i}");
                let (n, bytes) = store.held();
                assert!(bytes <= max && n <= 1_000, "record {i}: {n} records, {bytes} bytes");
            }
            store
        });
        let (n, bytes) = store.held();
        assert_eq!(allocated, bytes);
        assert!(n > 100, "{n} records kept in {bytes} bytes");
    }
}
