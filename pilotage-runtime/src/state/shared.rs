//! [`SharedState`]: everything the runtime keeps between requests, behind one trait, so one
//! process can keep it in memory ([`MemoryState`](super::MemoryState)), on disk
//! ([`SqliteState`](super::SqliteState), the default durable store) or several replicas can share
//! it in PostgreSQL (`PostgresState`, cargo feature `postgres`).
//!
//! What it holds, each scoped by its owner (the caller id; Part II §10.3):
//! - **run records** of Languages with ISO 8601 duration retention, each kept for its retention;
//! - **idempotency claims**: a key is claimed atomically before anything executes, so
//!   concurrent duplicates (on any replica) run once; the first Run's response is recorded for
//!   the key's window; a claimant that never settles (a crashed replica) loses its claim when
//!   its lease passes, a lease its live claimant renews (a heartbeat) while the Run goes on;
//!   the response is recorded in one atomic write with the Run's record;
//! - **promoted programs**, immutable, per owner and Language, at most a given number;
//! - **task records** (the MCP Tasks extension, beyond Pilotage 1.1), each kept for its TTL;
//! - **catalog histories**: the versions served to an owner (the most recent [`HISTORY_DEPTH`]
//!   per owner and Language) and the changes between versions served one after the other, so
//!   `changed_since` from one served by any replica composes the changes
//!   ([`catalog_history`](super::catalog_history)).
//!
//! Every backend passes the behavioural suite in `pilotage::testkit::state_suite`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::runs::RunRecord;
use super::tasks::TaskRecord;
use crate::engine::catalog::CatalogSnapshot;
use crate::model::catalog::ChangeKind;

/// How many served versions a store keeps per owner and Language for `changed_since`.
pub const HISTORY_DEPTH: usize = 32;

/// A store that failed (connection lost, disk full, unreadable row). Operations report it as
/// an internal request error; nothing is half-done on the caller's behalf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "state store: {}", self.0)
    }
}

impl std::error::Error for StoreError {}

impl StoreError {
    /// A store error from any displayable cause.
    pub fn from_display(e: impl std::fmt::Display) -> Self {
        StoreError(e.to_string())
    }
}

/// A store operation's value or its failure.
pub type StoreResult<T> = Result<T, StoreError>;

/// One idempotency key: the owner who used it, the Language and the key itself.
#[derive(Debug, Clone, Copy)]
pub struct KeyRef<'a> {
    /// The caller id.
    pub owner: &'a str,
    /// The Language.
    pub language: &'a str,
    /// The client's `idempotency_key`.
    pub key: &'a str,
}

/// What claiming a key found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claimed {
    /// The key is now claimed under this token: execute, then record or release it.
    Fresh(String),
    /// Another request holds a live claim with the same fingerprint: wait and claim again.
    Pending,
    /// The response recorded by the first Run under this key and fingerprint.
    Replay(Value),
    /// The key is held (pending or recorded) with another fingerprint.
    Conflict,
}

/// Whether a claim is still its claimant's, after [`SharedState::renew_key`] or
/// [`SharedState::record_key`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tenure {
    /// The claim is the caller's: renewed, or its response recorded (now, or already by an
    /// earlier attempt of the same claim, so a retried write is idempotent).
    Held,
    /// Another request took the key over (the lease had lapsed): nothing was written.
    Lost,
}

/// A run record to keep in the same write as an idempotency key's response, for `keep_for`:
/// the key never replays a `run_id` whose record was not kept with it.
#[derive(Debug, Clone, Copy)]
pub struct KeptRun<'a> {
    /// The record.
    pub record: &'a RunRecord,
    /// How long it is retrievable (as [`SharedState::put_run`]).
    pub keep_for: Duration,
}

/// Whether a promotion is held after [`SharedState::put_promotion`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Added now, or already there (a reference names one immutable body).
    Held,
    /// The owner already has the most promotions allowed for the Language (by count, or, in
    /// the in-memory store, by the memory they hold).
    Full,
}

/// Everything the runtime keeps between requests. Implementations are shared by every request
/// (and, for a database, by every replica), so each method is atomic on its own.
#[async_trait::async_trait]
pub trait SharedState: Send + Sync + 'static {
    /// Whether what it keeps survives a restart (required by ISO 8601 duration retention).
    fn durable(&self) -> bool;

    /// Store a run record, retrievable by its owner for at least `keep_for`. It is durable
    /// (for a durable store) when this returns.
    async fn put_run(&self, record: &RunRecord, keep_for: Duration) -> StoreResult<()>;

    /// The record `run_id` if `owner` ran it and it is within retention; a foreign, expired
    /// or unknown run is `None`, indistinguishably.
    async fn get_run(&self, owner: &str, run_id: &str) -> StoreResult<Option<RunRecord>>;

    /// Claim `key` for a request whose runnable, input and mode hash to `fingerprint`; a
    /// fresh claim lives for `lease` unless renewed ([`SharedState::renew_key`]), recorded or
    /// released first. A lapsed claim is taken over only when the store cannot tell that its
    /// claimant still lives (a backend shared by several processes may know more than the
    /// lease: see `PostgresState`).
    async fn claim_key(&self, key: KeyRef<'_>, fingerprint: &str, lease: Duration) -> StoreResult<Claimed>;

    /// Extend a live claim of `token` to `lease` from now (the claimant's heartbeat);
    /// [`Tenure::Lost`] when another request holds the key now or it was recorded.
    async fn renew_key(&self, key: KeyRef<'_>, token: &str, lease: Duration) -> StoreResult<Tenure>;

    /// Record the first Run's `response` under a claim of `token`, replayed for `keep_for`,
    /// and, in the same atomic write, the Run's record `run` where the Run is kept: either both
    /// are stored or neither. Retrying after an unknown end (a lost connection) is safe: a
    /// response this claim already recorded answers [`Tenure::Held`] and writes nothing again.
    /// A claim that was lost (another request took the key over) writes nothing:
    /// [`Tenure::Lost`].
    async fn record_key(
        &self,
        key: KeyRef<'_>,
        token: &str,
        response: &Value,
        keep_for: Duration,
        run: Option<KeptRun<'_>>,
    ) -> StoreResult<Tenure>;

    /// Release a claim of `token` that recorded nothing (the request was refused or failed),
    /// so a retry may run.
    async fn release_key(&self, key: KeyRef<'_>, token: &str) -> StoreResult<()>;

    /// Keep the promoted program `record` as `reference` for `owner`, unless the owner already
    /// holds `max` promotions of the Language.
    async fn put_promotion(
        &self,
        owner: &str,
        language: &str,
        reference: &str,
        record: &Value,
        max: usize,
    ) -> StoreResult<Stored>;

    /// Every promotion of `owner` in the Language, as `(reference, record)`, oldest first.
    async fn promotions(&self, owner: &str, language: &str) -> StoreResult<Vec<(String, Value)>>;

    /// Remember that `snapshot` was served to `owner`: a version other than the owner's last
    /// joins the owner's chain (its most recent [`HISTORY_DEPTH`] are kept per Language).
    async fn remember_catalog(
        &self,
        owner: &str,
        language: &str,
        snapshot: &Arc<CatalogSnapshot>,
    ) -> StoreResult<()>;

    /// The ids added, removed or modified, in id order, from the version `since` served to
    /// `owner` to `current` (also served to `owner`); `None` when `since` is unknown or
    /// forgotten. Proportional to the changes: no snapshot is read back, and the same token is
    /// answered at once.
    async fn catalog_changes(
        &self,
        owner: &str,
        language: &str,
        since: &str,
        current: &Arc<CatalogSnapshot>,
    ) -> StoreResult<Option<Vec<(String, ChangeKind)>>>;

    /// Store task `record` (inserted, or replacing the record of the same `task_id`), kept
    /// until [`TaskRecord::expires_at_ms`]. Durable (for a durable store) when this returns.
    async fn put_task(&self, record: &TaskRecord) -> StoreResult<()>;

    /// The task `task_id` if `owner` started it and it has not expired; a foreign, expired or
    /// unknown task is `None`, indistinguishably.
    async fn get_task(&self, owner: &str, task_id: &str) -> StoreResult<Option<TaskRecord>>;

    /// Whether several processes share this store, so a working task another process
    /// started may still be running there (`false`: one that is not running here never
    /// will).
    fn shared_by_replicas(&self) -> bool {
        false
    }

    /// Delete what has expired (runs past retention, keys past their window, leases long
    /// gone); returns how many rows or items went. Backends also do it on their own now and
    /// then, so calling it is never required.
    async fn purge_expired(&self) -> StoreResult<u64> {
        Ok(0)
    }
}
