//! [`MemoryState`]: the [`SharedState`] of one process, in memory. It is what a deployment
//! keeps when no store is configured, and the private scope of a caller whose identity lives
//! only as long as its MCP session. Bounded: run records by count and bytes, keys by count.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::catalog_history::changes_between;
use super::runs::{MemoryRunStore, RunRecord};
use super::shared::{Claimed, KeptRun, KeyRef, SharedState, StoreResult, Stored, Tenure, HISTORY_DEPTH};
use super::tasks::{now_ms, TaskRecord};
use super::weighed::Weighed;
use crate::engine::catalog::CatalogSnapshot;
use crate::model::catalog::ChangeKind;

/// Most idempotency keys one [`MemoryState`] holds; past it the oldest recorded key is
/// forgotten first (a later duplicate of it would run again, which only this bound allows).
pub const MAX_MEMORY_KEYS: usize = 65_536;

/// The recorded responses of a [`MemoryState`]'s idempotency keys may hold this many times its
/// run records' byte bound (64 MiB with the default limits). Past it the oldest recorded Run
/// responses are replaced by a short request error that names the Run: the key stays recorded,
/// so a duplicate never runs the program again; it is told the response is no longer held.
pub const KEY_BYTES_PER_RUN_BYTE: usize = 4;

/// Most task records one [`MemoryState`] holds; past it expired ones go first, then the oldest
/// ended ones (a running task's record is never dropped: those are bounded per caller by
/// [`Limits::max_live_tasks`](crate::engine::Limits::max_live_tasks)).
pub const MAX_MEMORY_TASKS: usize = 65_536;

/// How long past its lease a pending claim is kept: every claimant of a [`MemoryState`] lives
/// in this process and gives its claim back when it ends, so a lapsed lease means a claimant
/// held up, not a dead one.
pub const MEMORY_CLAIM_GRACE: Duration = Duration::from_secs(60);

enum Slot {
    Pending {
        fingerprint: String,
        token: String,
        until: Instant,
    },
    /// A recorded response (weighed by the memory it holds, 0 once [`forget_responses`]
    /// replaced it by a short error naming its run).
    Done {
        fingerprint: String,
        token: String,
        response: Arc<Value>,
        until: Instant,
    },
}

impl Slot {
    fn until(&self) -> Instant {
        match self {
            Slot::Pending { until, .. } | Slot::Done { until, .. } => *until,
        }
    }
}

type Scope = (String, String);

/// An idempotency key: owner, Language, key.
type KeyId = (String, String, String);

/// One owner's promotions of one Language, in the order they were made, each with the memory
/// its record holds.
type Promotions = BTreeMap<u64, (String, Value, usize)>;

/// Everything [`SharedState`] keeps, in this process's memory (not durable).
pub struct MemoryState {
    runs: MemoryRunStore,
    /// Idempotency keys, each weighed by its recorded response.
    keys: Mutex<Weighed<KeyId, Slot>>,
    /// The bytes, counted as memory, that each of these may hold: the keys' recorded responses
    /// (past it the oldest are forgotten, [`forget_responses`]); one owner's promoted programs
    /// of a Language (past it a promotion is refused, `Stored::Full`); the tasks' results (past
    /// it the oldest ended records go, as past [`MAX_MEMORY_TASKS`]).
    held_bytes: usize,
    promotions: Mutex<HashMap<Scope, Promotions>>,
    /// Per owner and Language, the snapshots served, oldest first (a chain of versions).
    catalogs: Mutex<HashMap<Scope, VecDeque<Arc<CatalogSnapshot>>>>,
    /// Task records, each weighed by its result and error.
    tasks: Mutex<Weighed<String, TaskRecord>>,
}

impl MemoryState {
    /// A store keeping at most `max_runs` run records and `max_bytes` bytes of them, and its
    /// idempotency keys' recorded responses, and each owner's promoted programs of a Language,
    /// each within [`KEY_BYTES_PER_RUN_BYTE`] times `max_bytes` (counted as the memory they
    /// hold).
    pub fn bounded(max_runs: usize, max_bytes: usize) -> Self {
        MemoryState {
            runs: MemoryRunStore::bounded(max_runs, max_bytes),
            keys: Mutex::default(),
            held_bytes: max_bytes.saturating_mul(KEY_BYTES_PER_RUN_BYTE),
            promotions: Mutex::default(),
            catalogs: Mutex::default(),
            tasks: Mutex::default(),
        }
    }

    /// How many idempotency keys are held (pending or recorded).
    pub fn keys_held(&self) -> usize {
        lock(&self.keys).len()
    }
}

impl Default for MemoryState {
    /// The run bounds of [`Limits`](crate::engine::Limits)'s defaults.
    fn default() -> Self {
        let limits = crate::engine::Limits::default();
        Self::bounded(limits.max_retained_runs, limits.max_retained_bytes)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn later(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d).unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400))
}

fn scope(owner: &str, language: &str) -> Scope {
    (owner.to_owned(), language.to_owned())
}

/// Make room for one more task record holding `bytes`: forget expired ones, then the oldest
/// ended ones, until the records are fewer than [`MAX_MEMORY_TASKS`] and hold at most
/// `max_bytes` with it.
fn make_task_room(tasks: &mut Weighed<String, TaskRecord>, bytes: usize, max_bytes: usize) {
    let full = |tasks: &Weighed<String, TaskRecord>| {
        tasks.len() >= MAX_MEMORY_TASKS || (!tasks.is_empty() && tasks.bytes() + bytes > max_bytes)
    };
    if !full(tasks) {
        return;
    }
    let now = now_ms();
    tasks.retain(|t| t.expires_at_ms() > now);
    while full(tasks) {
        let oldest = tasks
            .iter()
            .map(|(_, t, _)| t)
            .filter(|t| t.state != super::tasks::TaskState::Working)
            .min_by_key(|t| t.expires_at_ms())
            .map(|t| t.task_id.clone());
        match oldest {
            Some(k) => tasks.remove(&k),
            None => break,
        };
    }
}

/// Keep the recorded responses within `bound` bytes: past it, the oldest recorded Run responses
/// (a request error recorded instead is already short) become a short `bounds_exceeded` error
/// naming the Run and its outcome, which a duplicate is answered with (see
/// [`KEY_BYTES_PER_RUN_BYTE`]).
fn forget_responses(slots: &mut Weighed<KeyId, Slot>, bound: usize) {
    while slots.bytes() > bound {
        let oldest = slots
            .iter()
            .filter(|(_, s, bytes)| *bytes > 0 && matches!(s, Slot::Done { .. }))
            .min_by_key(|(_, s, _)| s.until())
            .map(|(k, ..)| k.clone());
        let Some(k) = oldest else { break };
        if let Some(Slot::Done { fingerprint, token, response, until }) = slots.remove(&k) {
            let response = Arc::new(forgotten(&response));
            slots.insert(k, Slot::Done { fingerprint, token, response, until }, 0);
        }
    }
}

/// What a duplicate of a key whose Run response was forgotten is answered.
fn forgotten(response: &Value) -> Value {
    if response.get("error").is_some() {
        return response.clone();
    }
    let run = response["run_id"].as_str().unwrap_or("unknown");
    let status = response["outcome"]["status"].as_str().unwrap_or("unknown");
    let error = crate::model::errors::RequestError::new(
        crate::model::errors::ErrorKind::BoundsExceeded,
        format!(
            "the program already ran under this idempotency_key (run {run}, outcome {status}) and does not run \
             again; its response is no longer held (the server's memory bound for recorded responses): \
             fetch the run's trace with its run_id while it is retained"
        ),
    );
    serde_json::to_value(error).unwrap_or(Value::Null)
}

/// Make room for one more key: forget expired ones, then the oldest recorded ones.
fn make_room(slots: &mut Weighed<KeyId, Slot>) {
    if slots.len() < MAX_MEMORY_KEYS {
        return;
    }
    let now = Instant::now();
    slots.retain(|s| s.until() > now);
    while slots.len() >= MAX_MEMORY_KEYS {
        let oldest = slots
            .iter()
            .filter(|(_, s, _)| matches!(s, Slot::Done { .. }))
            .min_by_key(|(_, s, _)| s.until())
            .map(|(k, ..)| k.clone());
        match oldest {
            Some(k) => slots.remove(&k),
            None => break,
        };
    }
}

#[async_trait::async_trait]
impl SharedState for MemoryState {
    fn durable(&self) -> bool {
        false
    }

    async fn put_run(&self, record: &RunRecord, keep_for: Duration) -> StoreResult<()> {
        self.runs.put(record, keep_for).map_err(super::shared::StoreError)
    }

    async fn get_run(&self, owner: &str, run_id: &str) -> StoreResult<Option<RunRecord>> {
        Ok(self.runs.get(run_id).filter(|r| r.owner == owner))
    }

    async fn claim_key(&self, key: KeyRef<'_>, fingerprint: &str, lease: Duration) -> StoreResult<Claimed> {
        let k = (key.owner.to_owned(), key.language.to_owned(), key.key.to_owned());
        let mut slots = lock(&self.keys);
        let now = Instant::now();
        let live = |s: &Slot| match s {
            Slot::Pending { until, .. } => until.checked_add(MEMORY_CLAIM_GRACE).is_none_or(|u| u > now),
            Slot::Done { until, .. } => *until > now,
        };
        match slots.get(&k) {
            Some(s) if live(s) => {
                return Ok(match s {
                    Slot::Pending { fingerprint: f, .. } if f == fingerprint => Claimed::Pending,
                    Slot::Done { fingerprint: f, response, .. } if f == fingerprint => {
                        Claimed::Replay((**response).clone())
                    }
                    _ => Claimed::Conflict,
                })
            }
            _ => {}
        }
        make_room(&mut slots);
        let token = uuid::Uuid::new_v4().simple().to_string();
        let slot =
            Slot::Pending { fingerprint: fingerprint.to_owned(), token: token.clone(), until: later(lease) };
        slots.insert(k, slot, 0);
        Ok(Claimed::Fresh(token))
    }

    async fn renew_key(&self, key: KeyRef<'_>, token: &str, lease: Duration) -> StoreResult<Tenure> {
        let k = (key.owner.to_owned(), key.language.to_owned(), key.key.to_owned());
        let mut slots = lock(&self.keys);
        match slots.get_mut(&k) {
            Some(Slot::Pending { token: t, until, .. }) if t == token => {
                *until = later(lease);
                Ok(Tenure::Held)
            }
            _ => Ok(Tenure::Lost),
        }
    }

    /// The key and the run are written under the keys' lock, the run first: a claim that
    /// looks up the key sees the response only once the run it names is kept.
    async fn record_key(
        &self,
        key: KeyRef<'_>,
        token: &str,
        response: &Value,
        keep_for: Duration,
        run: Option<KeptRun<'_>>,
    ) -> StoreResult<Tenure> {
        let k = (key.owner.to_owned(), key.language.to_owned(), key.key.to_owned());
        let mut slots = lock(&self.keys);
        let fingerprint = match slots.get(&k) {
            Some(Slot::Pending { fingerprint, token: t, .. }) if t == token => fingerprint.clone(),
            Some(Slot::Done { token: t, .. }) if t == token => return Ok(Tenure::Held),
            _ => return Ok(Tenure::Lost),
        };
        if let Some(run) = run {
            self.runs.put(run.record, run.keep_for).map_err(super::shared::StoreError)?;
        }
        let (token, bytes) = (token.to_owned(), crate::engine::memory::value_memory(response));
        let slot =
            Slot::Done { fingerprint, token, response: Arc::new(response.clone()), until: later(keep_for) };
        slots.insert(k, slot, bytes);
        forget_responses(&mut slots, self.held_bytes);
        Ok(Tenure::Held)
    }

    async fn release_key(&self, key: KeyRef<'_>, token: &str) -> StoreResult<()> {
        let k = (key.owner.to_owned(), key.language.to_owned(), key.key.to_owned());
        let mut slots = lock(&self.keys);
        if matches!(slots.get(&k), Some(Slot::Pending { token: t, .. }) if t == token) {
            slots.remove(&k);
        }
        Ok(())
    }

    async fn put_promotion(
        &self,
        owner: &str,
        language: &str,
        reference: &str,
        record: &Value,
        max: usize,
    ) -> StoreResult<Stored> {
        let mut all = lock(&self.promotions);
        let held = all.entry(scope(owner, language)).or_default();
        if held.values().any(|(r, ..)| r == reference) {
            return Ok(Stored::Held);
        }
        let bytes = crate::engine::memory::value_memory(record);
        let holding = held.values().map(|(.., b)| *b).sum::<usize>();
        if held.len() >= max || holding.saturating_add(bytes) > self.held_bytes {
            return Ok(Stored::Full);
        }
        let next = held.keys().next_back().map_or(0, |n| n + 1);
        held.insert(next, (reference.to_owned(), record.clone(), bytes));
        Ok(Stored::Held)
    }

    async fn promotions(&self, owner: &str, language: &str) -> StoreResult<Vec<(String, Value)>> {
        let all = lock(&self.promotions);
        let held = all.get(&scope(owner, language));
        Ok(held.map(|h| h.values().map(|(r, v, _)| (r.clone(), v.clone())).collect()).unwrap_or_default())
    }

    async fn remember_catalog(
        &self,
        owner: &str,
        language: &str,
        snapshot: &Arc<CatalogSnapshot>,
    ) -> StoreResult<()> {
        let mut all = lock(&self.catalogs);
        let chain = all.entry(scope(owner, language)).or_default();
        if chain.back().is_some_and(|s| s.version() == snapshot.version()) {
            return Ok(());
        }
        chain.push_back(snapshot.clone());
        while chain.len() > HISTORY_DEPTH {
            chain.pop_front();
        }
        Ok(())
    }

    /// The snapshots themselves are kept, so the changes are one digest walk from the one with
    /// token `since` to `current` (what composing the deltas along the chain gives, exactly).
    async fn catalog_changes(
        &self,
        owner: &str,
        language: &str,
        since: &str,
        current: &Arc<CatalogSnapshot>,
    ) -> StoreResult<Option<Vec<(String, ChangeKind)>>> {
        if since == current.version() {
            return Ok(Some(Vec::new()));
        }
        let old = {
            let all = lock(&self.catalogs);
            all.get(&scope(owner, language)).and_then(|c| c.iter().rfind(|s| s.version() == since).cloned())
        };
        Ok(old.map(|old| changes_between(&old, current)))
    }

    async fn put_task(&self, record: &TaskRecord) -> StoreResult<()> {
        let value = |v: &Option<Value>| v.as_ref().map_or(0, crate::engine::memory::value_memory);
        let bytes = value(&record.result) + value(&record.error);
        let mut tasks = lock(&self.tasks);
        // The record it replaces makes room for it first.
        tasks.remove(&record.task_id);
        make_task_room(&mut tasks, bytes, self.held_bytes);
        tasks.insert(record.task_id.clone(), record.clone(), bytes);
        Ok(())
    }

    async fn get_task(&self, owner: &str, task_id: &str) -> StoreResult<Option<TaskRecord>> {
        let now = now_ms();
        let tasks = lock(&self.tasks);
        Ok(tasks.get(task_id).filter(|t| t.owner == owner && t.expires_at_ms() > now).cloned())
    }

    async fn purge_expired(&self) -> StoreResult<u64> {
        let gone_tasks = {
            let mut tasks = lock(&self.tasks);
            let (before, now) = (tasks.len(), now_ms());
            tasks.retain(|t| t.expires_at_ms() > now);
            before - tasks.len()
        };
        let mut slots = lock(&self.keys);
        let before = slots.len();
        let now = Instant::now();
        slots.retain(|s| s.until() > now);
        Ok((before - slots.len() + gone_tasks) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The in-memory store's idempotency keys hold their recorded responses within a byte bound
    /// counted as memory: past it the oldest Run responses become a short `bounds_exceeded` error
    /// naming the Run, and the key stays recorded (a duplicate never runs the program again).
    #[tokio::test]
    async fn memory_keys_hold_their_responses_within_a_byte_bound() {
        use crate::state::shared::{Claimed, KeyRef, SharedState};
        let hour = std::time::Duration::from_secs(3600);
        let rows: Vec<serde_json::Value> =
            (0..1_000).map(|i| json!({"id": i, "name": format!("customer {i}")})).collect();
        let response = |run: &str| {
            json!({"run_id": run, "outcome": {"ok": true, "status": "success", "error": null},
                                          "output": {"rows": rows}})
        };
        let each = crate::engine::memory::value_memory(&response("run_0"));
        // Room for three responses of the keys (the bound is four times the runs' bytes).
        let store = MemoryState::bounded(100, 3 * each / KEY_BYTES_PER_RUN_BYTE + 1);
        let key = |k: &'static str| KeyRef { owner: "o", language: "l/v1", key: k };
        let keys = ["k0", "k1", "k2", "k3", "k4"];
        for (i, k) in keys.into_iter().enumerate() {
            let Claimed::Fresh(token) = store.claim_key(key(k), "f", hour).await.unwrap() else {
                panic!("fresh")
            };
            store.record_key(key(k), &token, &response(&format!("run_{i}")), hour, None).await.unwrap();
        }
        for (i, k) in keys.into_iter().enumerate() {
            let Claimed::Replay(replayed) = store.claim_key(key(k), "f", hour).await.unwrap() else {
                panic!("{k}: recorded keys replay, the forgotten ones too")
            };
            if i < 2 {
                assert_eq!(replayed["error"]["kind"], "bounds_exceeded", "{k}");
                let message = replayed["error"]["message"].as_str().unwrap();
                assert!(message.contains(&format!("run run_{i}, outcome success")), "{message}");
                assert!(message.contains("does not run again"), "{message}");
            } else {
                assert_eq!(replayed, response(&format!("run_{i}")), "{k}: the latest are replayed whole");
            }
        }
    }

    /// The in-memory store keeps one owner's promoted programs of a Language within a byte bound
    /// counted as memory, beside the count: past it a promotion is `Full` (refused as
    /// `bounds_exceeded`), and another owner or Language has its own.
    #[tokio::test]
    async fn memory_promotions_are_bounded_in_memory() {
        use crate::state::shared::{SharedState, Stored};
        let program = json!({"steps": (0..1_000).map(|i| json!({"id": format!("s{i}"), "kind": "set", "value": i})).collect::<Vec<_>>()});
        let each = crate::engine::memory::value_memory(&program);
        let store = MemoryState::bounded(100, 2 * each / KEY_BYTES_PER_RUN_BYTE + 1);
        let put = |owner: &'static str, lang: &'static str, r: &'static str| {
            let (store, program) = (&store, &program);
            async move { store.put_promotion(owner, lang, r, program, 256).await.unwrap() }
        };
        assert_eq!(put("o", "l/v1", "p1").await, Stored::Held);
        assert_eq!(put("o", "l/v1", "p2").await, Stored::Held);
        assert_eq!(put("o", "l/v1", "p3").await, Stored::Full, "two fit, not three");
        assert_eq!(put("o", "l/v1", "p1").await, Stored::Held, "one already held is held");
        assert_eq!(put("other", "l/v1", "p3").await, Stored::Held);
        assert_eq!(put("o", "m/v1", "p3").await, Stored::Held);
        assert_eq!(store.promotions("o", "l/v1").await.unwrap().len(), 2);
    }

    /// The in-memory store keeps the ended tasks' results within a byte bound counted as memory:
    /// past it the oldest ended records go (as past the count), a working one never does.
    #[tokio::test]
    async fn memory_task_results_are_bounded_in_memory() {
        use crate::state::shared::SharedState;
        use crate::state::tasks::{TaskRecord, TaskState};
        let rows: Vec<serde_json::Value> =
            (0..1_000).map(|i| json!({"id": i, "name": format!("customer {i}")})).collect();
        let result = json!({"structuredContent": {"output": rows}});
        let each = crate::engine::memory::value_memory(&result);
        let store = MemoryState::bounded(100, 2 * each / KEY_BYTES_PER_RUN_BYTE + 1);
        let task = |id: &str, ended: bool| {
            let mut t = TaskRecord::working(
                id.into(),
                "o".into(),
                "l/v1".into(),
                format!("run_{id}"),
                3_600_000,
                "i".into(),
            );
            if ended {
                t.state = TaskState::Completed;
                t.result = Some(result.clone());
            }
            t
        };
        store.put_task(&task("task_w", false)).await.unwrap();
        for id in ["task_1", "task_2", "task_3"] {
            store.put_task(&task(id, true)).await.unwrap();
            std::thread::sleep(std::time::Duration::from_millis(2)); // distinct expiries, oldest first
        }
        let held = |id: &'static str| {
            let store = &store;
            async move { store.get_task("o", id).await.unwrap().is_some() }
        };
        assert!(!held("task_1").await, "the oldest ended task went");
        assert!(held("task_2").await && held("task_3").await && held("task_w").await);
        // Updating a held record replaces it without evicting the others.
        store.put_task(&task("task_3", true)).await.unwrap();
        assert!(held("task_2").await && held("task_3").await);
    }
}
