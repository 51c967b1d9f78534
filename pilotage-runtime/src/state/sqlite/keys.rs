//! Idempotency claims in the SQLite store: claiming a key and recording its response with its
//! run, each in one immediate transaction.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::Value;

use super::clock::{after_ms, now_ms};
use crate::state::shared::{Claimed, Tenure};

/// Claim a key inside one immediate transaction (see [`SharedState::claim_key`]); a lapsed
/// claim whose token is in `live` (its claimant is in this process) is not taken over.
///
/// [`SharedState::claim_key`]: crate::state::SharedState::claim_key
pub(super) fn claim(
    conn: &mut Connection,
    live: &Mutex<HashSet<String>>,
    k: [String; 3],
    fingerprint: String,
    lease: Duration,
) -> rusqlite::Result<Claimed> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let held: Option<(String, Option<String>, String, bool)> = tx
        .query_row(
            "SELECT fingerprint, response, token, expires_at_ms > ?4 FROM pilotage_keys
             WHERE owner = ?1 AND language = ?2 AND key = ?3",
            params![k[0], k[1], k[2], now_ms()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()?;
    let lives = |token: &str| live.lock().map_or(true, |l| l.contains(token));
    let held =
        held.filter(|(_, response, token, unexpired)| *unexpired || (response.is_none() && lives(token)));
    let claimed = match held {
        Some((f, ..)) if f != fingerprint => Claimed::Conflict,
        Some((_, None, ..)) => Claimed::Pending,
        Some((_, Some(text), ..)) => Claimed::Replay(serde_json::from_str(&text).unwrap_or(Value::Null)),
        None => {
            let token = uuid::Uuid::new_v4().simple().to_string();
            tx.execute(
                "INSERT OR REPLACE INTO pilotage_keys
                 (owner, language, key, fingerprint, token, response, expires_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6)",
                params![k[0], k[1], k[2], fingerprint, token, after_ms(lease)],
            )?;
            if let Ok(mut l) = live.lock() {
                l.insert(token.clone());
            }
            Claimed::Fresh(token)
        }
    };
    tx.commit()?;
    Ok(claimed)
}

/// Record a key's response and its run in one immediate transaction (see
/// [`SharedState::record_key`]).
///
/// [`SharedState::record_key`]: crate::state::SharedState::record_key
pub(super) fn record(
    conn: &mut Connection,
    (k, token): &([String; 3], String),
    (text, until): (String, i64),
    run: Option<(String, String, i64)>,
) -> rusqlite::Result<Tenure> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let updated = tx.execute(
        "UPDATE pilotage_keys SET response = ?5, expires_at_ms = ?6
         WHERE owner = ?1 AND language = ?2 AND key = ?3 AND token = ?4 AND response IS NULL",
        params![k[0], k[1], k[2], token, text, until],
    )?;
    let tenure = if updated == 1 {
        if let Some((run_id, record, expires)) = run {
            tx.execute(
                "INSERT OR REPLACE INTO pilotage_runs (run_id, record, expires_at_ms) VALUES (?1, ?2, ?3)",
                params![run_id, record, expires],
            )?;
        }
        Tenure::Held
    } else {
        let recorded: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM pilotage_keys
             WHERE owner = ?1 AND language = ?2 AND key = ?3 AND token = ?4 AND response IS NOT NULL)",
            params![k[0], k[1], k[2], token],
            |r| r.get(0),
        )?;
        if recorded {
            Tenure::Held
        } else {
            Tenure::Lost
        }
    };
    tx.commit()?;
    Ok(tenure)
}
