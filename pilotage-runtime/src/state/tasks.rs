//! Tasks (the MCP Tasks extension, `io.modelcontextprotocol/tasks`; beyond Pilotage 1.1): the
//! [`TaskRecord`] kept in the deployment's [`SharedState`](super::SharedState) (so a task
//! outlives the request that started it and, in a durable store, the process), and the
//! [`LiveTasks`] of this process (the running ones: their cancellation, their Run's recorder
//! for a partial trace, their step count).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::engine::Recorder;

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Its Run is going.
    Working,
    /// It ended with a `tools/call` result (any outcome, request errors included).
    Completed,
    /// It ended with a JSON-RPC error, or its process stopped while it was working.
    Failed,
    /// The client cancelled it; its Run ended `partial` and is fetchable by `run_id`.
    Cancelled,
}

/// One task, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task id (`task_` and 16 hex digits).
    pub task_id: String,
    /// The caller that started it (others see no such task).
    pub owner: String,
    /// The Language of the execute it runs.
    pub language: String,
    /// The Run it runs.
    pub run_id: String,
    /// Where it is.
    pub state: TaskState,
    /// Trace entries recorded so far (as last reported).
    pub steps_done: u64,
    /// The `tools/call` result, once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The JSON-RPC error object, once failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// RFC 3339 time of the last change.
    pub updated_at: String,
    /// Milliseconds the record is kept from creation.
    pub ttl_ms: u64,
    /// The process that runs (or ran) it: a working task of another process that is gone
    /// reports `failed`.
    pub instance: String,
}

impl TaskRecord {
    /// A task that starts working now on `run_id`, created by `instance`, kept `ttl_ms`.
    pub fn working(
        task_id: String,
        owner: String,
        language: String,
        run_id: String,
        ttl_ms: u64,
        instance: String,
    ) -> Self {
        let now = rfc3339(now_ms());
        TaskRecord {
            task_id,
            owner,
            language,
            run_id,
            state: TaskState::Working,
            steps_done: 0,
            result: None,
            error: None,
            created_at: now.clone(),
            updated_at: now,
            ttl_ms,
            instance,
        }
    }

    /// Milliseconds since the Unix epoch past which the record may be forgotten.
    pub fn expires_at_ms(&self) -> u64 {
        let created = parse_millis(&self.created_at).unwrap_or_else(now_ms);
        created.saturating_add(self.ttl_ms)
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// An RFC 3339 UTC time (`2026-12-03T07:00:00.123Z`) for `ms` since the epoch.
pub fn rfc3339(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// Milliseconds since the epoch of an RFC 3339 time (as [`rfc3339`] writes them).
pub fn parse_millis(t: &str) -> Option<u64> {
    let parsed = chrono::DateTime::parse_from_rfc3339(t).ok()?;
    u64::try_from(parsed.timestamp_millis()).ok()
}

/// One running task of this process.
pub struct LiveTask {
    /// The caller that started it.
    pub owner: String,
    /// Its Run.
    pub run_id: String,
    /// The Language.
    pub language: String,
    /// Fired by `tasks/cancel`.
    pub cancel: CancellationToken,
    /// Trace entries recorded so far.
    pub done: AtomicUsize,
    /// The Run's recorder, once the Run started (its steps are the partial trace).
    pub recorder: Mutex<Option<Recorder>>,
}

/// The running tasks of this process, bounded per caller.
#[derive(Default)]
pub struct LiveTasks {
    by_id: Mutex<HashMap<String, Arc<LiveTask>>>,
}

/// Why a task could not start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyTasks(pub usize);

impl LiveTasks {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<LiveTask>>> {
        self.by_id.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register `task` under `task_id`, unless its owner already runs `max` tasks here.
    pub fn start(&self, task_id: &str, task: LiveTask, max: usize) -> Result<Arc<LiveTask>, TooManyTasks> {
        let mut all = self.lock();
        let running = all.values().filter(|t| t.owner == task.owner).count();
        if running >= max {
            return Err(TooManyTasks(max));
        }
        let task = Arc::new(task);
        all.insert(task_id.to_owned(), task.clone());
        Ok(task)
    }

    /// The running task `task_id` of `owner`.
    pub fn get(&self, owner: &str, task_id: &str) -> Option<Arc<LiveTask>> {
        self.lock().get(task_id).filter(|t| t.owner == owner).cloned()
    }

    /// The running task whose Run is `run_id`, if `owner` started it.
    pub fn by_run(&self, owner: &str, run_id: &str) -> Option<Arc<LiveTask>> {
        self.lock().values().find(|t| t.owner == owner && t.run_id == run_id).cloned()
    }

    /// The task ended (its record is final).
    pub fn end(&self, task_id: &str) {
        self.lock().remove(task_id);
    }

    /// How many tasks `owner` runs here.
    pub fn running(&self, owner: &str) -> usize {
        self.lock().values().filter(|t| t.owner == owner).count()
    }
}

impl LiveTask {
    /// A task of `owner` running Run `run_id` of `language`.
    pub fn new(owner: &str, run_id: &str, language: &str) -> Self {
        LiveTask {
            owner: owner.to_owned(),
            run_id: run_id.to_owned(),
            language: language.to_owned(),
            cancel: CancellationToken::new(),
            done: AtomicUsize::new(0),
            recorder: Mutex::new(None),
        }
    }

    /// Trace entries recorded so far: the Run's own count while it runs, the last reported
    /// once its steps were taken for the response.
    pub fn steps_done(&self) -> usize {
        let reported = self.done.load(Ordering::Relaxed);
        self.recorder().map_or(reported, |r| r.recorded().max(reported))
    }

    /// The Run's recorder, once it started.
    pub fn recorder(&self) -> Option<Recorder> {
        self.recorder.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip() {
        for ms in [0, 1_764_745_200_123, 951_782_400_000, 4_102_444_799_999] {
            assert_eq!(parse_millis(&rfc3339(ms)), Some(ms), "{}", rfc3339(ms));
        }
        assert_eq!(rfc3339(1_764_745_200_123), "2025-12-03T07:00:00.123Z");
        assert_eq!(parse_millis("not a time"), None);
    }
}
