//! [`PostgresState`] (cargo feature `postgres`): the [`SharedState`] of several replicas in one
//! PostgreSQL database, so a run executed on one replica is fetched on another, an idempotent
//! retry routed elsewhere replays, and a promotion made on one runs on all. Claims are atomic
//! in the database (one `INSERT … ON CONFLICT … WHERE` per claim) and leases are timed by the
//! database's clock, so replicas need no clock agreement. Migrations are versioned and applied
//! at [`PostgresState::connect`] under an advisory lock, so replicas starting together apply
//! each once. JSON is kept as text, so a replayed response is byte-identical to the first.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use serde_json::Value;
use tokio_postgres::NoTls;

mod keys;
mod sql;

use self::keys::Liveness;
use self::sql::{err, ms, LATER};
use super::catalog_history::{
    chain_path, changes_along, compose, pair_key, to_remember, CatalogDelta, DigestList, Found, Previous,
    RecentSnapshots, Remembered, UNUSED_DELTAS, UNUSED_LISTS,
};
use super::runs::RunRecord;
use super::shared::{Claimed, KeptRun, KeyRef, SharedState, StoreResult, Stored, Tenure, HISTORY_DEPTH};
use super::tasks::TaskRecord;
use crate::engine::catalog::CatalogSnapshot;
use crate::model::catalog::ChangeKind;

/// How a [`PostgresState`] connects, and the bounds it keeps.
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    /// Most connections this process opens; default 16.
    pub max_connections: usize,
    /// Longest wait for a free connection or a new one; default 5 s.
    pub wait: Duration,
    /// Longest one statement may run (PostgreSQL's `statement_timeout`); default 5 s.
    pub statement_timeout: Duration,
    /// How long past its lease an idempotency claim is kept for a claimant whose process
    /// still lives (its liveness connection is open) but cannot renew it (a locked table,
    /// revoked privileges); default 60 s. A claim of a dead process is taken over as soon as
    /// its lease lapses.
    pub claim_grace: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            max_connections: 16,
            wait: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(5),
            claim_grace: Duration::from_secs(60),
        }
    }
}

/// Everything [`SharedState`] keeps, in PostgreSQL tables prefixed `pilotage_`.
#[derive(Clone)]
pub struct PostgresState {
    pool: Pool,
    writes: Arc<AtomicUsize>,
    recent: Arc<RecentSnapshots>,
    liveness: Arc<Liveness>,
    grace: Duration,
}

/// Writes between two purges of expired rows (by whichever replica counts to it).
pub const PURGE_EVERY: usize = 256;

/// The lock that serialises migrations between replicas starting together.
const MIGRATION_LOCK: i64 = 0x7069_6c6f_7461_6765; // "pilotage"

/// The schema, one step per version.
pub(crate) const MIGRATIONS: [&str; 4] = [
    "
    CREATE TABLE pilotage_runs (
        run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, record TEXT NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL);
    CREATE TABLE pilotage_keys (
        owner TEXT NOT NULL, language TEXT NOT NULL, key TEXT NOT NULL,
        fingerprint TEXT NOT NULL, token TEXT NOT NULL, response TEXT,
        expires_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (owner, language, key));
    CREATE TABLE pilotage_promotions (
        seq BIGSERIAL PRIMARY KEY, owner TEXT NOT NULL, language TEXT NOT NULL,
        reference TEXT NOT NULL, record TEXT NOT NULL, UNIQUE (owner, language, reference));
    CREATE TABLE pilotage_catalogs (
        owner TEXT NOT NULL, language TEXT NOT NULL, version TEXT NOT NULL,
        entries TEXT NOT NULL, served_at TIMESTAMPTZ NOT NULL, seq BIGINT NOT NULL,
        PRIMARY KEY (owner, language, version));
    CREATE INDEX pilotage_runs_expiry ON pilotage_runs (expires_at);
    CREATE INDEX pilotage_keys_expiry ON pilotage_keys (expires_at);
",
    "
    CREATE TABLE pilotage_tasks (
        task_id TEXT PRIMARY KEY, owner TEXT NOT NULL, record TEXT NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL);
    CREATE INDEX pilotage_tasks_expiry ON pilotage_tasks (expires_at);
",
    // Catalog histories proportional to the changes (`state::catalog_history`): no whole snapshot.
    "
    DROP TABLE IF EXISTS pilotage_catalogs;
    CREATE TABLE pilotage_catalog_chain (
        owner TEXT NOT NULL, language TEXT NOT NULL, seq BIGINT NOT NULL, version TEXT NOT NULL,
        served_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (owner, language, seq));
    CREATE INDEX pilotage_catalog_chain_version ON pilotage_catalog_chain (language, version);
    CREATE TABLE pilotage_catalog_lists (
        language TEXT NOT NULL, version TEXT NOT NULL, ids BYTEA NOT NULL, PRIMARY KEY (language, version));
    CREATE TABLE pilotage_catalog_deltas (
        language TEXT NOT NULL, lo TEXT NOT NULL, hi TEXT NOT NULL, delta BYTEA NOT NULL,
        PRIMARY KEY (language, lo, hi));
",
    // A claim names its claimant's liveness backend (`postgres::keys`).
    "
    ALTER TABLE pilotage_keys ADD COLUMN holder_pid INTEGER, ADD COLUMN holder_start TIMESTAMPTZ;
",
];

/// Hold the transaction's lock `what` (1: promotions, 2: catalogs) on one owner and Language,
/// so one replica at a time changes them.
async fn lock_scope(
    tx: &deadpool_postgres::Transaction<'_>,
    what: i32,
    owner: &str,
    language: &str,
) -> StoreResult<()> {
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($2 || chr($1) || $3, 0))",
        &[&what, &owner, &language],
    )
    .await
    .map(drop)
    .map_err(err)
}

impl PostgresState {
    /// Connect to `url` (`postgres://user@host:port/db`) with default options and apply the
    /// migrations this database has not seen.
    pub async fn connect(url: &str) -> StoreResult<Self> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// [`PostgresState::connect`] with explicit bounds.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> StoreResult<Self> {
        let mut config: tokio_postgres::Config = url.parse().map_err(err)?;
        config.connect_timeout(options.wait);
        // Keep the URL's own `options` (a `search_path`, say) and bound every statement.
        let url_options = config.get_options().map(|o| format!("{o} ")).unwrap_or_default();
        config
            .options(format!("{url_options}-c statement_timeout={}", options.statement_timeout.as_millis()));
        let liveness = Arc::new(Liveness::new(config.clone(), options.wait));
        let manager =
            Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(options.max_connections.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(options.wait))
            .create_timeout(Some(options.wait))
            .recycle_timeout(Some(options.wait))
            .build()
            .map_err(err)?;
        let (writes, recent, grace) = (Arc::default(), Arc::default(), options.claim_grace);
        let state = PostgresState { pool, writes, recent, liveness, grace };
        state.migrate().await?;
        Ok(state)
    }

    async fn client(&self) -> StoreResult<deadpool_postgres::Object> {
        self.pool.get().await.map_err(err)
    }

    /// The schema version of the database (the number of migrations applied).
    pub async fn schema_version(&self) -> StoreResult<i64> {
        let row =
            self.client().await?.query_one("SELECT version FROM pilotage_schema", &[]).await.map_err(err)?;
        Ok(row.get(0))
    }

    async fn migrate(&self) -> StoreResult<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(err)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await.map_err(err)?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS pilotage_schema (version BIGINT NOT NULL)")
            .await
            .map_err(err)?;
        let done: i64 = tx
            .query_opt("SELECT version FROM pilotage_schema", &[])
            .await
            .map_err(err)?
            .map_or(0, |r| r.get(0));
        for (i, step) in MIGRATIONS.iter().enumerate().skip(usize::try_from(done).unwrap_or(0)) {
            tx.batch_execute(step).await.map_err(err)?;
            tx.execute("DELETE FROM pilotage_schema", &[]).await.map_err(err)?;
            tx.execute("INSERT INTO pilotage_schema (version) VALUES ($1)", &[&(i as i64 + 1)])
                .await
                .map_err(err)?;
        }
        tx.commit().await.map_err(err)
    }

    /// Count a write; every [`PURGE_EVERY`] writes, purge.
    async fn count_write(&self) {
        if self.writes.fetch_add(1, Ordering::Relaxed) % PURGE_EVERY == PURGE_EVERY - 1 {
            if let Err(e) = self.purge_expired().await {
                tracing::warn!(error = %e, "could not purge expired rows");
            }
        }
    }
}

/// An owner's chain of served versions of a Language, oldest first, with the last `seq`.
async fn chain(
    client: &impl deadpool_postgres::GenericClient,
    owner: &str,
    language: &str,
) -> StoreResult<(Vec<String>, i64)> {
    let rows = client
        .query(
            "SELECT version, seq FROM pilotage_catalog_chain WHERE owner = $1 AND language = $2 ORDER BY seq",
            &[&owner, &language],
        )
        .await
        .map_err(err)?;
    let last = rows.last().map_or(Ok(0), |r| r.try_get(1)).map_err(err)?;
    let versions = rows.iter().map(|r| r.try_get(0)).collect::<Result<_, _>>().map_err(err)?;
    Ok((versions, last))
}

/// Whether the list of `version` is stored.
async fn list_stored(
    client: &impl deadpool_postgres::GenericClient,
    language: &str,
    version: &str,
) -> StoreResult<bool> {
    let row = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pilotage_catalog_lists WHERE language = $1 AND version = $2)",
            &[&language, &version],
        )
        .await
        .map_err(err)?;
    row.try_get(0).map_err(err)
}

/// Whether the delta of the pair `(lo, hi)` is stored.
async fn delta_stored(
    client: &impl deadpool_postgres::GenericClient,
    language: &str,
    (lo, hi): (&str, &str),
) -> StoreResult<bool> {
    let row = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pilotage_catalog_deltas WHERE language = $1 AND lo = $2 AND hi = $3)",
            &[&language, &lo, &hi],
        )
        .await
        .map_err(err)?;
    row.try_get(0).map_err(err)
}

/// The stored deltas of the pairs `keys` (each `(lo, hi)`), by pair.
async fn stored_deltas(
    client: &impl deadpool_postgres::GenericClient,
    language: &str,
    keys: &[(&str, &str)],
) -> StoreResult<HashMap<(String, String), CatalogDelta>> {
    let (los, his): (Vec<&str>, Vec<&str>) = keys.iter().copied().unzip();
    let rows = client
        .query(
            "SELECT lo, hi, delta FROM pilotage_catalog_deltas
             WHERE language = $1 AND (lo, hi) IN (SELECT * FROM unnest($2::TEXT[], $3::TEXT[]))",
            &[&language, &los, &his],
        )
        .await
        .map_err(err)?;
    let mut found = HashMap::new();
    for r in rows {
        let (lo, hi): (String, String) = (r.try_get(0).map_err(err)?, r.try_get(1).map_err(err)?);
        found.insert((lo, hi), CatalogDelta::decode(r.try_get(2).map_err(err)?)?);
    }
    Ok(found)
}

/// Write what [`to_remember`] decided, append `version` to the owner's chain after `last` and
/// keep its last [`HISTORY_DEPTH`].
async fn store_remembered(
    tx: &deadpool_postgres::Transaction<'_>,
    [owner, language, version]: [&str; 3],
    last: i64,
    write: Remembered,
) -> StoreResult<()> {
    if let Some((lo, hi, delta)) = write.delta {
        tx.execute(
            "INSERT INTO pilotage_catalog_deltas (language, lo, hi, delta) VALUES ($1, $2, $3, $4)
             ON CONFLICT DO NOTHING",
            &[&language, &lo, &hi, &delta],
        )
        .await
        .map_err(err)?;
    }
    if let Some(ids) = write.list {
        tx.execute(
            "INSERT INTO pilotage_catalog_lists (language, version, ids) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            &[&language, &version, &ids],
        )
        .await
        .map_err(err)?;
    }
    tx.execute(
        "INSERT INTO pilotage_catalog_chain (owner, language, seq, version, served_at)
         VALUES ($1, $2, $3, $4, clock_timestamp())",
        &[&owner, &language, &(last + 1), &version],
    )
    .await
    .map_err(err)?;
    tx.execute(
        "DELETE FROM pilotage_catalog_chain WHERE owner = $1 AND language = $2 AND seq <= $3",
        &[&owner, &language, &(last + 1 - HISTORY_DEPTH as i64)],
    )
    .await
    .map(drop)
    .map_err(err)
}

impl PostgresState {
    /// The changes along the owner's chain from `since` to `current` (see [`Found`]).
    async fn look(&self, owner: &str, language: &str, since: &str, current: &str) -> StoreResult<Found> {
        let client = self.client().await?;
        let (versions, _) = chain(&client, owner, language).await?;
        let links = match chain_path(&versions, since, current).links() {
            Ok(links) => links,
            Err(found) => return Ok(found),
        };
        let keys: Vec<(&str, &str)> = links.iter().map(|&(a, b)| pair_key(a, b)).collect();
        let stored = stored_deltas(&client, language, &keys).await?;
        Ok(Found::Changes(compose(&links, &stored)))
    }

    /// The content of `version` for a delta from it: this process's snapshot, else the stored
    /// list (decoded off the async workers).
    async fn previous(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        language: &str,
        version: &str,
    ) -> StoreResult<Option<Previous>> {
        if let Some(snapshot) = self.recent.get(language, version) {
            return Ok(Some(Previous::Cached(snapshot)));
        }
        let row = tx
            .query_opt(
                "SELECT ids FROM pilotage_catalog_lists WHERE language = $1 AND version = $2",
                &[&language, &version],
            )
            .await
            .map_err(err)?;
        let Some(row) = row else { return Ok(None) };
        let bytes: Vec<u8> = row.try_get(0).map_err(err)?;
        let list = tokio::task::spawn_blocking(move || DigestList::decode(&bytes)).await.map_err(err)??;
        Ok(Some(Previous::Stored(list)))
    }
}

#[async_trait::async_trait]
impl SharedState for PostgresState {
    fn durable(&self) -> bool {
        true
    }

    async fn put_run(&self, record: &RunRecord, keep_for: Duration) -> StoreResult<()> {
        self.count_write().await;
        let text = serde_json::to_string(record).map_err(err)?;
        self.client()
            .await?
            .execute(
                &format!(
                    "INSERT INTO pilotage_runs (run_id, owner, record, expires_at) VALUES ($2, $3, $4, {LATER})
                     ON CONFLICT (run_id) DO UPDATE SET owner = EXCLUDED.owner, record = EXCLUDED.record,
                       expires_at = EXCLUDED.expires_at"
                ),
                &[&ms(keep_for), &record.run_id, &record.owner, &text],
            )
            .await
            .map(drop)
            .map_err(err)
    }

    async fn get_run(&self, owner: &str, run_id: &str) -> StoreResult<Option<RunRecord>> {
        let row = self
            .client()
            .await?
            .query_opt(
                "SELECT record FROM pilotage_runs WHERE run_id = $1 AND owner = $2 AND expires_at > clock_timestamp()",
                &[&run_id, &owner],
            )
            .await
            .map_err(err)?;
        row.map(|r| serde_json::from_str(r.get::<_, &str>(0)).map_err(err)).transpose()
    }

    async fn put_task(&self, record: &TaskRecord) -> StoreResult<()> {
        self.count_write().await;
        let text = serde_json::to_string(record).map_err(err)?;
        let expires = i64::try_from(record.expires_at_ms()).unwrap_or(i64::MAX);
        self.client()
            .await?
            .execute(
                "INSERT INTO pilotage_tasks (task_id, owner, record, expires_at)
                 VALUES ($1, $2, $3, to_timestamp($4::BIGINT / 1000.0))
                 ON CONFLICT (task_id) DO UPDATE SET owner = EXCLUDED.owner, record = EXCLUDED.record,
                   expires_at = EXCLUDED.expires_at",
                &[&record.task_id, &record.owner, &text, &expires],
            )
            .await
            .map(drop)
            .map_err(err)
    }

    async fn get_task(&self, owner: &str, task_id: &str) -> StoreResult<Option<TaskRecord>> {
        let row = self
            .client()
            .await?
            .query_opt(
                "SELECT record FROM pilotage_tasks WHERE task_id = $1 AND owner = $2 AND expires_at > clock_timestamp()",
                &[&task_id, &owner],
            )
            .await
            .map_err(err)?;
        row.map(|r| serde_json::from_str(r.get::<_, &str>(0)).map_err(err)).transpose()
    }

    fn shared_by_replicas(&self) -> bool {
        true
    }

    async fn claim_key(&self, key: KeyRef<'_>, fingerprint: &str, lease: Duration) -> StoreResult<Claimed> {
        self.count_write().await;
        let holder = self.liveness.holder().await;
        for _ in 0..8 {
            let client = self.client().await?;
            if let Some(claimed) =
                keys::claim_once(&client, key, fingerprint, (lease, self.grace), holder).await?
            {
                return Ok(claimed);
            }
        }
        Ok(Claimed::Pending)
    }

    async fn renew_key(&self, key: KeyRef<'_>, token: &str, lease: Duration) -> StoreResult<Tenure> {
        let holder = self.liveness.holder().await;
        keys::renew(&self.client().await?, key, token, lease, holder).await
    }

    async fn record_key(
        &self,
        key: KeyRef<'_>,
        token: &str,
        response: &Value,
        keep_for: Duration,
        run: Option<KeptRun<'_>>,
    ) -> StoreResult<Tenure> {
        keys::record(&mut self.client().await?, (key, token), (response, keep_for), run).await
    }

    async fn release_key(&self, key: KeyRef<'_>, token: &str) -> StoreResult<()> {
        keys::release(&self.client().await?, key, token).await
    }

    async fn put_promotion(
        &self,
        owner: &str,
        language: &str,
        reference: &str,
        record: &Value,
        max: usize,
    ) -> StoreResult<Stored> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(err)?;
        // One promoter at a time per owner and Language, so the cap holds across replicas.
        lock_scope(&tx, 1, owner, language).await?;
        let row = tx
            .query_one(
                "SELECT COUNT(*) FILTER (WHERE reference = $3), COUNT(*) FROM pilotage_promotions
                 WHERE owner = $1 AND language = $2",
                &[&owner, &language, &reference],
            )
            .await
            .map_err(err)?;
        let (held, count): (i64, i64) = (row.get(0), row.get(1));
        let stored = match (held > 0, count >= i64::try_from(max).unwrap_or(i64::MAX)) {
            (true, _) => Stored::Held,
            (false, true) => Stored::Full,
            (false, false) => {
                tx.execute(
                    "INSERT INTO pilotage_promotions (owner, language, reference, record) VALUES ($1, $2, $3, $4)",
                    &[&owner, &language, &reference, &record.to_string()],
                )
                .await
                .map_err(err)?;
                Stored::Held
            }
        };
        tx.commit().await.map_err(err)?;
        Ok(stored)
    }

    async fn promotions(&self, owner: &str, language: &str) -> StoreResult<Vec<(String, Value)>> {
        let rows = self
            .client()
            .await?
            .query(
                "SELECT reference, record FROM pilotage_promotions WHERE owner = $1 AND language = $2 ORDER BY seq",
                &[&owner, &language],
            )
            .await
            .map_err(err)?;
        rows.iter()
            .map(|r| Ok((r.get::<_, String>(0), serde_json::from_str(r.get::<_, &str>(1)).map_err(err)?)))
            .collect()
    }

    async fn remember_catalog(
        &self,
        owner: &str,
        language: &str,
        snapshot: &Arc<CatalogSnapshot>,
    ) -> StoreResult<()> {
        self.count_write().await;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(err)?;
        // One change at a time to an owner's chain, across replicas.
        lock_scope(&tx, 2, owner, language).await?;
        let (versions, last) = chain(&tx, owner, language).await?;
        let version = snapshot.version();
        if versions.last().is_some_and(|v| v == version) {
            tx.execute(
                "UPDATE pilotage_catalog_chain SET served_at = clock_timestamp()
                 WHERE owner = $1 AND language = $2 AND seq = $3",
                &[&owner, &language, &last],
            )
            .await
            .map_err(err)?;
            return tx.commit().await.map_err(err);
        }
        let before = match versions.last() {
            Some(prev) if !delta_stored(&tx, language, pair_key(prev, version)).await? => {
                self.previous(&tx, language, prev).await?.map(|p| (prev.clone(), p))
            }
            _ => None,
        };
        let listed = list_stored(&tx, language, version).await?;
        let snap = snapshot.clone();
        let write = tokio::task::spawn_blocking(move || {
            to_remember(before.as_ref().map(|(v, p)| (v.as_str(), p)), &snap, listed)
        })
        .await
        .map_err(err)?;
        store_remembered(&tx, [owner, language, version], last, write).await?;
        tx.commit().await.map_err(err)?;
        self.recent.put(language, snapshot);
        Ok(())
    }

    async fn catalog_changes(
        &self,
        owner: &str,
        language: &str,
        since: &str,
        current: &Arc<CatalogSnapshot>,
    ) -> StoreResult<Option<Vec<(String, ChangeKind)>>> {
        let look = || self.look(owner, language, since, current.version());
        changes_along(since, current, look, || self.remember_catalog(owner, language, current)).await
    }

    async fn purge_expired(&self) -> StoreResult<u64> {
        let client = self.client().await?;
        let mut gone = 0;
        for sql in [
            "DELETE FROM pilotage_runs WHERE expires_at <= clock_timestamp()",
            "DELETE FROM pilotage_keys WHERE expires_at <= clock_timestamp()",
            "DELETE FROM pilotage_catalog_chain WHERE served_at <= clock_timestamp() - INTERVAL '1 day'",
            UNUSED_DELTAS,
            UNUSED_LISTS,
            "DELETE FROM pilotage_tasks WHERE expires_at <= clock_timestamp()",
        ] {
            gone += client.execute(sql, &[]).await.map_err(err)?;
        }
        Ok(gone)
    }
}
