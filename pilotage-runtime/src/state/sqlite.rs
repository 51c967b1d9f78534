//! Durable run storage for Languages whose retention is an ISO 8601 duration.
//!
//! [`SqliteRunStore`] keeps run records in one SQLite file (the library is bundled, nothing to
//! install). A record is committed before `put` returns, so the execute response is sent only
//! after the record is durable, and it is served for the retention period after it was stored,
//! across server restarts. Another store (a shared database for several server instances)
//! plugs in through [`RunStore`].

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension};

use super::runs::{RunRecord, RunStore};

/// Run records in an SQLite file, each expiring after the retention period it was stored with.
///
/// ```
/// use pilotage_runtime::state::SqliteRunStore;
/// use pilotage_runtime::state::RunStore;
/// let store = SqliteRunStore::in_memory().unwrap();
/// assert!(store.get("run_missing").is_none());
/// ```
pub struct SqliteRunStore {
    conn: Mutex<Connection>,
    durable: bool,
    writes: std::sync::atomic::AtomicUsize,
}

/// Writes between two purges of expired rows.
pub const PURGE_EVERY: usize = 256;

fn now_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

impl SqliteRunStore {
    /// Open (or create) the store at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, String> {
        let conn = Connection::open(path).map_err(|e| e.to_string())?;
        Self::with(conn, true)
    }

    /// A store in memory (not durable; for tests).
    pub fn in_memory() -> Result<Self, String> {
        let conn = Connection::open_in_memory().map_err(|e| e.to_string())?;
        Self::with(conn, false)
    }

    fn with(conn: Connection, durable: bool) -> Result<Self, String> {
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;
             CREATE TABLE IF NOT EXISTS pilotage_runs (
                run_id TEXT PRIMARY KEY,
                record TEXT NOT NULL,
                expires_at_ms INTEGER NOT NULL
             );
             CREATE TABLE IF NOT EXISTS pilotage_replays (
                key TEXT PRIMARY KEY,
                fingerprint TEXT NOT NULL,
                response TEXT NOT NULL,
                expires_at_ms INTEGER NOT NULL
             );",
        )
        .map_err(|e| e.to_string())?;
        Ok(SqliteRunStore { conn: Mutex::new(conn), durable, writes: Default::default() })
    }

    /// Delete expired records; returns how many.
    /// Delete expired run records and idempotency records; returns how many. Called every
    /// [`PURGE_EVERY`] writes, so a store never holds more than that many expired rows past
    /// their window.
    pub fn purge_expired(&self) -> usize {
        let Ok(conn) = self.conn.lock() else { return 0 };
        let now = now_ms();
        let runs =
            conn.execute("DELETE FROM pilotage_runs WHERE expires_at_ms <= ?1", params![now]).unwrap_or(0);
        let replays =
            conn.execute("DELETE FROM pilotage_replays WHERE expires_at_ms <= ?1", params![now]).unwrap_or(0);
        runs + replays
    }

    fn count_write(&self) {
        if self.writes.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % PURGE_EVERY == PURGE_EVERY - 1 {
            self.purge_expired();
        }
    }
}

impl RunStore for SqliteRunStore {
    fn put(&self, record: RunRecord, keep_for: Duration) -> Result<(), String> {
        self.count_write();
        let text = serde_json::to_string(&record).map_err(|e| e.to_string())?;
        let retention_ms = i64::try_from(keep_for.as_millis()).unwrap_or(i64::MAX);
        let expires = now_ms().saturating_add(retention_ms);
        let conn = self.conn.lock().map_err(|_| "run store poisoned".to_owned())?;
        conn.execute(
            "INSERT OR REPLACE INTO pilotage_runs (run_id, record, expires_at_ms) VALUES (?1, ?2, ?3)",
            params![record.run_id, text, expires],
        )
        .map_err(|e| e.to_string())?;
        Ok(())
    }

    fn get(&self, run_id: &str) -> Option<RunRecord> {
        let conn = self.conn.lock().ok()?;
        let text: Option<String> = conn
            .query_row(
                "SELECT record FROM pilotage_runs WHERE run_id = ?1 AND expires_at_ms > ?2",
                params![run_id, now_ms()],
                |row| row.get(0),
            )
            .optional()
            .ok()
            .flatten();
        serde_json::from_str(&text?).ok()
    }

    fn durable(&self) -> bool {
        self.durable
    }

    fn put_replay(
        &self,
        key: &str,
        fingerprint: &str,
        response: &serde_json::Value,
        keep_for: Duration,
    ) -> Result<(), String> {
        self.count_write();
        let keep_ms = i64::try_from(keep_for.as_millis()).unwrap_or(i64::MAX);
        let conn = self.conn.lock().map_err(|_| "run store poisoned".to_owned())?;
        conn.execute(
            "INSERT OR REPLACE INTO pilotage_replays (key, fingerprint, response, expires_at_ms) VALUES (?1, ?2, ?3, ?4)",
            params![key, fingerprint, response.to_string(), now_ms().saturating_add(keep_ms)],
        )
        .map_err(|e| e.to_string())?;
        Ok(())
    }

    fn get_replay(&self, key: &str) -> Option<(String, serde_json::Value)> {
        let conn = self.conn.lock().ok()?;
        let (fingerprint, text): (String, String) = conn
            .query_row(
                "SELECT fingerprint, response FROM pilotage_replays WHERE key = ?1 AND expires_at_ms > ?2",
                params![key, now_ms()],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .ok()
            .flatten()?;
        Some((fingerprint, serde_json::from_str(&text).ok()?))
    }
}
