//! Idempotency claims in PostgreSQL. A claim row names its claimant's process by the backend of
//! a connection that process keeps open for the purpose ([`Liveness`]): a lapsed lease whose
//! claimant's connection still lives (its heartbeat held up by a locked table or revoked
//! privileges, the claimant alive) is not taken over before a grace period passes; one whose
//! process died (its connection closed with it) is taken over as soon as the lease lapses.

use std::time::Duration;

use deadpool_postgres::GenericClient;
use serde_json::Value;
use tokio_postgres::NoTls;

use super::sql::{err, ms, LATER};
use crate::state::shared::{Claimed, KeptRun, KeyRef, StoreResult, Tenure};

/// The connection that stands for this process's liveness: its backend's pid is written on
/// every claim this process takes or renews. Reopened when it is found closed.
pub(super) struct Liveness {
    config: tokio_postgres::Config,
    wait: Duration,
    held: tokio::sync::Mutex<Option<(tokio_postgres::Client, i32)>>,
}

impl Liveness {
    /// A liveness connection to the database of `config`, opened on first use.
    pub(super) fn new(config: tokio_postgres::Config, wait: Duration) -> Self {
        Liveness { config, wait, held: tokio::sync::Mutex::default() }
    }

    /// The pid of this process's liveness backend, reopening it where it closed; `None` when it
    /// cannot be opened within the pool's wait (claims then lapse with their lease alone).
    pub(super) async fn holder(&self) -> Option<i32> {
        let mut held = self.held.lock().await;
        if let Some((client, pid)) = &*held {
            if !client.is_closed() {
                return Some(*pid);
            }
        }
        *held = None;
        let open = async {
            let (client, connection) = self.config.connect(NoTls).await.ok()?;
            tokio::spawn(connection);
            let pid: i32 = client.query_one("SELECT pg_backend_pid()", &[]).await.ok()?.get(0);
            Some((client, pid))
        };
        let (client, pid) = tokio::time::timeout(self.wait, open).await.ok().flatten()?;
        *held = Some((client, pid));
        Some(pid)
    }
}

/// The claim's holder columns from parameter `$7` (a pid, or NULL).
const HOLDER: &str = "$7::INT, (SELECT backend_start FROM pg_stat_activity WHERE pid = $7::INT)";

/// Claim once; `None` when the row changed between the two statements (claim again). `lease`
/// is the fresh claim's, `grace` how long a lapsed claim of a live claimant is kept.
pub(super) async fn claim_once(
    client: &impl GenericClient,
    k: KeyRef<'_>,
    fingerprint: &str,
    (lease, grace): (Duration, Duration),
    holder: Option<i32>,
) -> StoreResult<Option<Claimed>> {
    let token = uuid::Uuid::new_v4().simple().to_string();
    let taken = client
        .query_opt(
            &format!(
                "INSERT INTO pilotage_keys AS k
                   (owner, language, key, fingerprint, token, response, expires_at, holder_pid, holder_start)
                 VALUES ($2, $3, $4, $5, $6, NULL, {LATER}, {HOLDER})
                 ON CONFLICT (owner, language, key) DO UPDATE
                   SET fingerprint = EXCLUDED.fingerprint, token = EXCLUDED.token, response = NULL,
                       expires_at = EXCLUDED.expires_at, holder_pid = EXCLUDED.holder_pid,
                       holder_start = EXCLUDED.holder_start
                   WHERE k.expires_at <= clock_timestamp()
                     AND (k.response IS NOT NULL
                          OR k.expires_at <= clock_timestamp() - $8::BIGINT * INTERVAL '1 millisecond'
                          OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = k.holder_pid
                                AND (a.backend_start IS NULL OR a.backend_start = k.holder_start)))
                 RETURNING token"
            ),
            &[&ms(lease), &k.owner, &k.language, &k.key, &fingerprint, &token, &holder, &ms(grace)],
        )
        .await
        .map_err(err)?;
    if taken.is_some() {
        return Ok(Some(Claimed::Fresh(token)));
    }
    let held = client
        .query_opt(
            "SELECT fingerprint, response, expires_at > clock_timestamp() FROM pilotage_keys
             WHERE owner = $1 AND language = $2 AND key = $3",
            &[&k.owner, &k.language, &k.key],
        )
        .await
        .map_err(err)?;
    Ok(held.and_then(|row| {
        let (f, response, live): (String, Option<String>, bool) = (row.get(0), row.get(1), row.get(2));
        match response {
            _ if f != fingerprint => Some(Claimed::Conflict),
            None => Some(Claimed::Pending),
            Some(text) if live => Some(Claimed::Replay(serde_json::from_str(&text).unwrap_or(Value::Null))),
            Some(_) => None,
        }
    }))
}

/// Extend the claim of `token` to `lease` from now, naming this process's liveness backend.
pub(super) async fn renew(
    client: &impl GenericClient,
    k: KeyRef<'_>,
    token: &str,
    lease: Duration,
    holder: Option<i32>,
) -> StoreResult<Tenure> {
    let renewed = client
        .execute(
            &format!(
                "UPDATE pilotage_keys SET expires_at = {LATER}, holder_pid = $6::INT,
                   holder_start = (SELECT backend_start FROM pg_stat_activity WHERE pid = $6::INT)
                 WHERE owner = $2 AND language = $3 AND key = $4 AND token = $5 AND response IS NULL"
            ),
            &[&ms(lease), &k.owner, &k.language, &k.key, &token, &holder],
        )
        .await
        .map_err(err)?;
    Ok(if renewed == 1 { Tenure::Held } else { Tenure::Lost })
}

/// Record the response of the claim of `token` and, in the same transaction, its run.
pub(super) async fn record(
    client: &mut deadpool_postgres::Object,
    (k, token): (KeyRef<'_>, &str),
    (response, keep_for): (&Value, Duration),
    run: Option<KeptRun<'_>>,
) -> StoreResult<Tenure> {
    let run = match run {
        Some(r) => Some((r, serde_json::to_string(r.record).map_err(err)?)),
        None => None,
    };
    let tx = client.transaction().await.map_err(err)?;
    let updated = tx
        .execute(
            &format!(
                "UPDATE pilotage_keys SET response = $6, expires_at = {LATER}
                 WHERE owner = $2 AND language = $3 AND key = $4 AND token = $5 AND response IS NULL"
            ),
            &[&ms(keep_for), &k.owner, &k.language, &k.key, &token, &response.to_string()],
        )
        .await
        .map_err(err)?;
    let tenure = if updated == 1 {
        if let Some((r, text)) = run {
            tx.execute(
                &format!(
                    "INSERT INTO pilotage_runs (run_id, owner, record, expires_at) VALUES ($2, $3, $4, {LATER})
                     ON CONFLICT (run_id) DO UPDATE SET owner = EXCLUDED.owner, record = EXCLUDED.record,
                       expires_at = EXCLUDED.expires_at"
                ),
                &[&ms(r.keep_for), &r.record.run_id, &r.record.owner, &text],
            )
            .await
            .map_err(err)?;
        }
        Tenure::Held
    } else {
        let row = tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pilotage_keys WHERE owner = $1 AND language = $2 AND key = $3
                   AND token = $4 AND response IS NOT NULL)",
                &[&k.owner, &k.language, &k.key, &token],
            )
            .await
            .map_err(err)?;
        if row.try_get(0).map_err(err)? {
            Tenure::Held
        } else {
            Tenure::Lost
        }
    };
    tx.commit().await.map_err(err)?;
    Ok(tenure)
}

/// Delete the claim of `token` if it recorded nothing.
pub(super) async fn release(client: &impl GenericClient, k: KeyRef<'_>, token: &str) -> StoreResult<()> {
    client
        .execute(
            "DELETE FROM pilotage_keys
             WHERE owner = $1 AND language = $2 AND key = $3 AND token = $4 AND response IS NULL",
            &[&k.owner, &k.language, &k.key, &token],
        )
        .await
        .map(drop)
        .map_err(err)
}
