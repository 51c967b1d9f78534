//! [`SqliteState`]: the [`SharedState`] of one process, durable, in one SQLite file (the library
//! is bundled, nothing to install). A write is committed before its method returns, so an
//! execute response is sent only after its record is durable, and everything is served across
//! restarts for as long as it is kept. Every call runs on the blocking pool, never on the async
//! workers. Several replicas share state through `PostgresState` instead.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::Value;

mod clock;
mod keys;

use self::clock::{after_ms, err, now_ms};
use super::catalog_history::{
    chain_path, changes_along, compose, pair_key, to_remember, CatalogDelta, DigestList, Found, Previous,
    RecentSnapshots, Remembered, UNUSED_DELTAS, UNUSED_LISTS,
};
use super::runs::RunRecord;
use super::shared::{
    Claimed, KeptRun, KeyRef, SharedState, StoreError, StoreResult, Stored, Tenure, HISTORY_DEPTH,
};
use super::tasks::TaskRecord;
use crate::engine::catalog::CatalogSnapshot;
use crate::model::catalog::ChangeKind;

/// Run records, idempotency keys, promotions and served catalogs in an SQLite file.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use pilotage_runtime::state::{SharedState, SqliteState};
/// let store = SqliteState::in_memory().unwrap();
/// assert!(store.get_run("caller", "run_missing").await.unwrap().is_none());
/// # });
/// ```
#[derive(Clone)]
pub struct SqliteState {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Mutex<Connection>,
    durable: bool,
    writes: AtomicUsize,
    recent: RecentSnapshots,
    /// The tokens of the claims this process holds and has not settled: a lapsed lease of one
    /// of them (its heartbeat held up by a locked file) is not taken over, as its claimant
    /// lives. A claim of another process on the same file lapses with its lease.
    live: Mutex<HashSet<String>>,
}

/// Writes between two purges of expired rows.
pub const PURGE_EVERY: usize = 256;

/// A version in an owner's chain not served again for this long is forgotten (`changed_since`
/// from it is then `unknown_baseline`, which the protocol allows), with the changes and lists
/// no chain needs any more.
pub const CATALOG_KEEP: Duration = Duration::from_secs(24 * 3600);

/// The schema, one step per version; a file records the last step applied.
const MIGRATIONS: [&str; 4] = [
    "CREATE TABLE IF NOT EXISTS pilotage_runs (
        run_id TEXT PRIMARY KEY, record TEXT NOT NULL, expires_at_ms INTEGER NOT NULL);
     CREATE TABLE IF NOT EXISTS pilotage_replays (
        key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, response TEXT NOT NULL,
        expires_at_ms INTEGER NOT NULL);",
    "DROP TABLE IF EXISTS pilotage_replays;
     CREATE TABLE pilotage_keys (
        owner TEXT NOT NULL, language TEXT NOT NULL, key TEXT NOT NULL,
        fingerprint TEXT NOT NULL, token TEXT NOT NULL, response TEXT,
        expires_at_ms INTEGER NOT NULL, PRIMARY KEY (owner, language, key));
     CREATE TABLE pilotage_promotions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, language TEXT NOT NULL,
        reference TEXT NOT NULL, record TEXT NOT NULL, UNIQUE (owner, language, reference));
     CREATE TABLE pilotage_catalogs (
        owner TEXT NOT NULL, language TEXT NOT NULL, version TEXT NOT NULL,
        entries TEXT NOT NULL, served_at_ms INTEGER NOT NULL, seq INTEGER NOT NULL,
        PRIMARY KEY (owner, language, version));",
    "CREATE TABLE pilotage_tasks (
        task_id TEXT PRIMARY KEY, owner TEXT NOT NULL, record TEXT NOT NULL,
        expires_at_ms INTEGER NOT NULL);",
    // Catalog histories proportional to the changes (`state::catalog_history`): no whole snapshot.
    "DROP TABLE IF EXISTS pilotage_catalogs;
     CREATE TABLE pilotage_catalog_chain (
        owner TEXT NOT NULL, language TEXT NOT NULL, seq INTEGER NOT NULL, version TEXT NOT NULL,
        served_at_ms INTEGER NOT NULL, PRIMARY KEY (owner, language, seq));
     CREATE INDEX pilotage_catalog_chain_version ON pilotage_catalog_chain (language, version);
     CREATE TABLE pilotage_catalog_lists (
        language TEXT NOT NULL, version TEXT NOT NULL, ids BLOB NOT NULL, PRIMARY KEY (language, version));
     CREATE TABLE pilotage_catalog_deltas (
        language TEXT NOT NULL, lo TEXT NOT NULL, hi TEXT NOT NULL, delta BLOB NOT NULL,
        PRIMARY KEY (language, lo, hi));",
];

/// Apply the migrations this file has not seen, in one transaction.
fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.execute_batch("CREATE TABLE IF NOT EXISTS pilotage_schema (version INTEGER NOT NULL)")?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let done: i64 =
        tx.query_row("SELECT version FROM pilotage_schema", [], |r| r.get(0)).optional()?.unwrap_or(0);
    for (i, step) in MIGRATIONS.iter().enumerate().skip(usize::try_from(done).unwrap_or(0)) {
        tx.execute_batch(step)?;
        tx.execute("DELETE FROM pilotage_schema", [])?;
        tx.execute("INSERT INTO pilotage_schema (version) VALUES (?1)", params![i as i64 + 1])?;
    }
    tx.commit()
}

impl SqliteState {
    /// Open (or create) the store at `path`, applying its migrations.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, String> {
        let conn = Connection::open(path).map_err(|e| e.to_string())?;
        Self::with(conn, true)
    }

    /// A store in memory (not durable; for tests).
    pub fn in_memory() -> Result<Self, String> {
        let conn = Connection::open_in_memory().map_err(|e| e.to_string())?;
        Self::with(conn, false)
    }

    fn with(mut conn: Connection, durable: bool) -> Result<Self, String> {
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA busy_timeout=5000;")
            .map_err(|e| e.to_string())?;
        migrate(&mut conn).map_err(|e| format!("migrating the store: {e}"))?;
        let inner = Inner {
            conn: Mutex::new(conn),
            durable,
            writes: AtomicUsize::new(0),
            recent: RecentSnapshots::default(),
            live: Mutex::default(),
        };
        Ok(SqliteState { inner: Arc::new(inner) })
    }

    /// The schema version of the file (the number of migrations applied).
    pub fn schema_version(&self) -> Result<i64, String> {
        let conn = self.inner.conn.lock().map_err(|_| "store poisoned".to_owned())?;
        conn.query_row("SELECT version FROM pilotage_schema", [], |r| r.get(0)).map_err(|e| e.to_string())
    }

    /// Delete expired rows now (on the calling thread); returns how many.
    pub fn purge_now(&self) -> usize {
        let Ok(conn) = self.inner.conn.lock() else { return 0 };
        purge(&conn).unwrap_or(0)
    }

    /// This process no longer holds the claim `token` (settled or given back).
    fn forget(&self, token: &str) {
        if let Ok(mut live) = self.inner.live.lock() {
            live.remove(token);
        }
    }

    /// Run `f` on the connection on the blocking pool; every [`PURGE_EVERY`] writes also purge.
    async fn call<T, F>(&self, write: bool, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.call_with(write, move |c, _| f(c).map_err(err)).await
    }

    /// [`SqliteState::call`] for work that fails otherwise too, with the recent snapshots.
    async fn call_with<T, F>(&self, write: bool, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &RecentSnapshots) -> StoreResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        let work = move || {
            let mut conn = inner.conn.lock().map_err(|_| StoreError("store poisoned".into()))?;
            if write && inner.writes.fetch_add(1, Ordering::Relaxed) % PURGE_EVERY == PURGE_EVERY - 1 {
                let _ = purge(&conn);
            }
            f(&mut conn, &inner.recent)
        };
        tokio::task::spawn_blocking(work).await.map_err(err)?
    }
}

fn purge(conn: &Connection) -> rusqlite::Result<usize> {
    let now = now_ms();
    let runs = conn.execute("DELETE FROM pilotage_runs WHERE expires_at_ms <= ?1", params![now])?;
    let keys = conn.execute("DELETE FROM pilotage_keys WHERE expires_at_ms <= ?1", params![now])?;
    let old = now.saturating_sub(i64::try_from(CATALOG_KEEP.as_millis()).unwrap_or(i64::MAX));
    let catalogs =
        conn.execute("DELETE FROM pilotage_catalog_chain WHERE served_at_ms <= ?1", params![old])?;
    let unused = conn.execute(UNUSED_DELTAS, [])? + conn.execute(UNUSED_LISTS, [])?;
    let tasks = conn.execute("DELETE FROM pilotage_tasks WHERE expires_at_ms <= ?1", params![now])?;
    Ok(runs + keys + catalogs + unused + tasks)
}

/// An owner's chain of served versions of a Language, oldest first, with the last `seq`.
fn chain(conn: &Connection, owner: &str, language: &str) -> rusqlite::Result<(Vec<String>, i64)> {
    let mut q = conn.prepare_cached(
        "SELECT version, seq FROM pilotage_catalog_chain WHERE owner = ?1 AND language = ?2 ORDER BY seq",
    )?;
    let rows =
        q.query_map(params![owner, language], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
    let mut versions = Vec::new();
    let mut last = 0;
    for row in rows {
        let (version, seq) = row?;
        versions.push(version);
        last = seq;
    }
    Ok((versions, last))
}

/// The stored delta of the pair `(lo, hi)`, if any.
fn stored_delta(
    conn: &Connection,
    language: &str,
    (lo, hi): (&str, &str),
) -> StoreResult<Option<CatalogDelta>> {
    let mut q = conn
        .prepare_cached(
            "SELECT delta FROM pilotage_catalog_deltas WHERE language = ?1 AND lo = ?2 AND hi = ?3",
        )
        .map_err(err)?;
    let bytes: Option<Vec<u8>> =
        q.query_row(params![language, lo, hi], |r| r.get(0)).optional().map_err(err)?;
    bytes.map(|b| CatalogDelta::decode(&b)).transpose()
}

/// The changes along the owner's chain from `since` to `current` (see [`Found`]).
fn look(conn: &Connection, owner: &str, language: &str, since: &str, current: &str) -> StoreResult<Found> {
    let (versions, _) = chain(conn, owner, language).map_err(err)?;
    let links = match chain_path(&versions, since, current).links() {
        Ok(links) => links,
        Err(found) => return Ok(found),
    };
    let mut stored = HashMap::new();
    for &(from, to) in &links {
        let (lo, hi) = pair_key(from, to);
        if let Some(delta) = stored_delta(conn, language, (lo, hi))? {
            stored.insert((lo.to_owned(), hi.to_owned()), delta);
        }
    }
    Ok(Found::Changes(compose(&links, &stored)))
}

/// The content of `version` for a delta from it: this process's snapshot, else the stored list.
fn previous(
    conn: &Connection,
    recent: &RecentSnapshots,
    language: &str,
    version: &str,
) -> StoreResult<Option<Previous>> {
    if let Some(snapshot) = recent.get(language, version) {
        return Ok(Some(Previous::Cached(snapshot)));
    }
    let mut q = conn
        .prepare_cached("SELECT ids FROM pilotage_catalog_lists WHERE language = ?1 AND version = ?2")
        .map_err(err)?;
    let bytes: Option<Vec<u8>> =
        q.query_row(params![language, version], |r| r.get(0)).optional().map_err(err)?;
    Ok(bytes.map(|b| DigestList::decode(&b)).transpose()?.map(Previous::Stored))
}

/// Whether the delta of the pair `(lo, hi)` is stored.
fn delta_stored(conn: &Connection, language: &str, (lo, hi): (&str, &str)) -> StoreResult<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM pilotage_catalog_deltas WHERE language = ?1 AND lo = ?2 AND hi = ?3)",
        params![language, lo, hi],
        |r| r.get(0),
    )
    .map_err(err)
}

/// Write what [`to_remember`] decided, append `version` to the owner's chain after `last` and
/// keep its last [`HISTORY_DEPTH`].
fn store_remembered(
    tx: &Connection,
    [owner, language, version]: [&str; 3],
    last: i64,
    write: Remembered,
) -> rusqlite::Result<()> {
    if let Some((lo, hi, delta)) = write.delta {
        tx.execute(
            "INSERT OR IGNORE INTO pilotage_catalog_deltas (language, lo, hi, delta) VALUES (?1, ?2, ?3, ?4)",
            params![language, lo, hi, delta],
        )?;
    }
    if let Some(ids) = write.list {
        tx.execute(
            "INSERT OR IGNORE INTO pilotage_catalog_lists (language, version, ids) VALUES (?1, ?2, ?3)",
            params![language, version, ids],
        )?;
    }
    tx.execute(
        "INSERT INTO pilotage_catalog_chain (owner, language, seq, version, served_at_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![owner, language, last + 1, version, now_ms()],
    )?;
    tx.execute(
        "DELETE FROM pilotage_catalog_chain WHERE owner = ?1 AND language = ?2 AND seq <= ?3",
        params![owner, language, last + 1 - HISTORY_DEPTH as i64],
    )
    .map(drop)
}

/// [`SharedState::remember_catalog`] in one immediate transaction.
fn remember(
    conn: &mut Connection,
    recent: &RecentSnapshots,
    [owner, language]: &[String; 2],
    snapshot: &CatalogSnapshot,
) -> StoreResult<()> {
    let version = snapshot.version();
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(err)?;
    let (versions, last) = chain(&tx, owner, language).map_err(err)?;
    if versions.last().is_some_and(|v| v == version) {
        tx.execute(
            "UPDATE pilotage_catalog_chain SET served_at_ms = ?4 WHERE owner = ?1 AND language = ?2 AND seq = ?3",
            params![owner, language, last, now_ms()],
        )
        .map_err(err)?;
        return tx.commit().map_err(err);
    }
    let before = match versions.last() {
        Some(prev) if !delta_stored(&tx, language, pair_key(prev, version))? => {
            previous(&tx, recent, language, prev)?.map(|p| (prev.as_str(), p))
        }
        _ => None,
    };
    let listed: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM pilotage_catalog_lists WHERE language = ?1 AND version = ?2)",
            params![language, version],
            |r| r.get(0),
        )
        .map_err(err)?;
    let write = to_remember(before.as_ref().map(|(v, p)| (*v, p)), snapshot, listed);
    store_remembered(&tx, [owner, language, version], last, write).map_err(err)?;
    tx.commit().map_err(err)
}

fn owned(key: KeyRef<'_>) -> [String; 3] {
    [key.owner.to_owned(), key.language.to_owned(), key.key.to_owned()]
}

#[async_trait::async_trait]
impl SharedState for SqliteState {
    fn durable(&self) -> bool {
        self.inner.durable
    }

    async fn put_run(&self, record: &RunRecord, keep_for: Duration) -> StoreResult<()> {
        let text = serde_json::to_string(record).map_err(err)?;
        let (run_id, expires) = (record.run_id.clone(), after_ms(keep_for));
        self.call(true, move |c| {
            c.execute(
                "INSERT OR REPLACE INTO pilotage_runs (run_id, record, expires_at_ms) VALUES (?1, ?2, ?3)",
                params![run_id, text, expires],
            )
            .map(drop)
        })
        .await
    }

    async fn get_run(&self, owner: &str, run_id: &str) -> StoreResult<Option<RunRecord>> {
        let run_id = run_id.to_owned();
        let text: Option<String> = self
            .call(false, move |c| {
                c.query_row(
                    "SELECT record FROM pilotage_runs WHERE run_id = ?1 AND expires_at_ms > ?2",
                    params![run_id, now_ms()],
                    |row| row.get(0),
                )
                .optional()
            })
            .await?;
        let record: Option<RunRecord> = text.map(|t| serde_json::from_str(&t)).transpose().map_err(err)?;
        Ok(record.filter(|r| r.owner == owner))
    }

    async fn put_task(&self, record: &TaskRecord) -> StoreResult<()> {
        let text = serde_json::to_string(record).map_err(err)?;
        let (task_id, owner) = (record.task_id.clone(), record.owner.clone());
        let expires = i64::try_from(record.expires_at_ms()).unwrap_or(i64::MAX);
        self.call(true, move |c| {
            c.execute(
                "INSERT OR REPLACE INTO pilotage_tasks (task_id, owner, record, expires_at_ms) VALUES (?1, ?2, ?3, ?4)",
                params![task_id, owner, text, expires],
            )
            .map(drop)
        })
        .await
    }

    async fn get_task(&self, owner: &str, task_id: &str) -> StoreResult<Option<TaskRecord>> {
        let (owner, task_id) = (owner.to_owned(), task_id.to_owned());
        let text: Option<String> = self
            .call(false, move |c| {
                c.query_row(
                    "SELECT record FROM pilotage_tasks WHERE task_id = ?1 AND owner = ?2 AND expires_at_ms > ?3",
                    params![task_id, owner, now_ms()],
                    |row| row.get(0),
                )
                .optional()
            })
            .await?;
        text.map(|t| serde_json::from_str(&t)).transpose().map_err(err)
    }

    async fn claim_key(&self, key: KeyRef<'_>, fingerprint: &str, lease: Duration) -> StoreResult<Claimed> {
        let (k, fingerprint, inner) = (owned(key), fingerprint.to_owned(), self.inner.clone());
        self.call(true, move |c| keys::claim(c, &inner.live, k, fingerprint, lease)).await
    }

    async fn renew_key(&self, key: KeyRef<'_>, token: &str, lease: Duration) -> StoreResult<Tenure> {
        let (k, token, until) = (owned(key), token.to_owned(), after_ms(lease));
        let renewed = self
            .call(false, move |c| {
                c.execute(
                    "UPDATE pilotage_keys SET expires_at_ms = ?5
                     WHERE owner = ?1 AND language = ?2 AND key = ?3 AND token = ?4 AND response IS NULL",
                    params![k[0], k[1], k[2], token, until],
                )
            })
            .await?;
        Ok(if renewed == 1 { Tenure::Held } else { Tenure::Lost })
    }

    async fn record_key(
        &self,
        key: KeyRef<'_>,
        token: &str,
        response: &Value,
        keep_for: Duration,
        run: Option<KeptRun<'_>>,
    ) -> StoreResult<Tenure> {
        let claim = (owned(key), token.to_owned());
        let text = (response.to_string(), after_ms(keep_for));
        let run = match run {
            Some(r) => Some((
                r.record.run_id.clone(),
                serde_json::to_string(r.record).map_err(err)?,
                after_ms(r.keep_for),
            )),
            None => None,
        };
        let tenure = self.call(true, move |c| keys::record(c, &claim, text, run)).await?;
        self.forget(token);
        Ok(tenure)
    }

    async fn release_key(&self, key: KeyRef<'_>, token: &str) -> StoreResult<()> {
        self.forget(token);
        let (k, token) = (owned(key), token.to_owned());
        self.call(true, move |c| {
            c.execute(
                "DELETE FROM pilotage_keys
                 WHERE owner = ?1 AND language = ?2 AND key = ?3 AND token = ?4 AND response IS NULL",
                params![k[0], k[1], k[2], token],
            )
            .map(drop)
        })
        .await
    }

    async fn put_promotion(
        &self,
        owner: &str,
        language: &str,
        reference: &str,
        record: &Value,
        max: usize,
    ) -> StoreResult<Stored> {
        let k = [owner.to_owned(), language.to_owned(), reference.to_owned()];
        let (text, max) = (record.to_string(), i64::try_from(max).unwrap_or(i64::MAX));
        self.call(true, move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let (held, count): (i64, i64) = tx.query_row(
                "SELECT COALESCE(SUM(reference = ?3), 0), COUNT(*) FROM pilotage_promotions
                 WHERE owner = ?1 AND language = ?2",
                params![k[0], k[1], k[2]],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let stored = match (held > 0, count >= max) {
                (true, _) => Stored::Held,
                (false, true) => Stored::Full,
                (false, false) => {
                    tx.execute(
                        "INSERT INTO pilotage_promotions (owner, language, reference, record) VALUES (?1, ?2, ?3, ?4)",
                        params![k[0], k[1], k[2], text],
                    )?;
                    Stored::Held
                }
            };
            tx.commit()?;
            Ok(stored)
        })
        .await
    }

    async fn promotions(&self, owner: &str, language: &str) -> StoreResult<Vec<(String, Value)>> {
        let (owner, language) = (owner.to_owned(), language.to_owned());
        let rows: Vec<(String, String)> = self
            .call(false, move |c| {
                let mut q = c.prepare_cached(
                    "SELECT reference, record FROM pilotage_promotions WHERE owner = ?1 AND language = ?2 ORDER BY seq",
                )?;
                let rows = q.query_map(params![owner, language], |r| Ok((r.get(0)?, r.get(1)?)))?;
                rows.collect()
            })
            .await?;
        rows.into_iter().map(|(r, t)| Ok((r, serde_json::from_str(&t).map_err(err)?))).collect()
    }

    async fn remember_catalog(
        &self,
        owner: &str,
        language: &str,
        snapshot: &Arc<CatalogSnapshot>,
    ) -> StoreResult<()> {
        let (k, snapshot) = ([owner.to_owned(), language.to_owned()], snapshot.clone());
        self.call_with(true, move |c, recent| {
            remember(c, recent, &k, &snapshot)?;
            recent.put(&k[1], &snapshot);
            Ok(())
        })
        .await
    }

    async fn catalog_changes(
        &self,
        owner: &str,
        language: &str,
        since: &str,
        current: &Arc<CatalogSnapshot>,
    ) -> StoreResult<Option<Vec<(String, ChangeKind)>>> {
        let k = [owner.to_owned(), language.to_owned(), since.to_owned(), current.version().to_owned()];
        let look = || {
            let k = k.clone();
            self.call_with(false, move |c, _| look(c, &k[0], &k[1], &k[2], &k[3]))
        };
        changes_along(since, current, look, || self.remember_catalog(owner, language, current)).await
    }

    async fn purge_expired(&self) -> StoreResult<u64> {
        self.call(false, |c| purge(c).map(|n| n as u64)).await
    }
}
