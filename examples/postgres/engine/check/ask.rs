//! The second pass: PostgreSQL itself, in one transaction as the caller's role that is always
//! rolled back; its answers, and its errors as diagnostics.

use pilotage::prelude::*;
use sqlparser::tokenizer::Location;

use tokio_postgres::{SimpleQueryMessage, Transaction};

use super::super::db::{ident, PgError};
use super::super::text::{range, significant, token_range, Source, Statement};
use super::super::{PgCode, PgRisk};
use super::{span_range, Checked};

/// PostgreSQL's row estimates for an `UPDATE` or `DELETE`: the rows it changes and its
/// table's rows.
#[derive(Clone, Copy, Debug)]
pub(super) struct Estimate {
    pub(super) rows: f64,
    pub(super) table: f64,
}

/// PostgreSQL's answer for one statement, inside the validation transaction: prepare it (or
/// run it, for DDL), under a savepoint so a failure leaves the transaction usable (the
/// savepoint, the prepare and the release go out together: one round trip); the estimates of
/// an `UPDATE`/`DELETE` without placeholders.
pub(super) async fn ask(
    tx: &deadpool_postgres::Transaction<'_>,
    schema: &str,
    c: &Checked,
    cacheable: bool,
) -> Result<Option<Estimate>, PgError> {
    let work = async {
        if c.ddl && c.unparsed.is_some() {
            // Never run what the validator could not read: it is refused anyway.
            Ok(())
        } else if c.ddl {
            let trimmed = c.pg_sql.trim_end().to_ascii_uppercase();
            let sql = if c.as_query && !trimmed.ends_with(" DATA") {
                format!("{} WITH NO DATA", c.pg_sql)
            } else {
                c.pg_sql.clone()
            };
            tx.batch_execute(&sql).await
        } else {
            // A statement this connection prepared before (the cache empties when the catalog
            // stamp moves) is PostgreSQL's answer already.
            if cacheable { tx.prepare_cached(&c.pg_sql).await } else { tx.prepare(&c.pg_sql).await }
                .map(|_| ())
        }
    };
    let (saved, done, released) = tokio::join!(
        tx.batch_execute("SAVEPOINT pilotage_check"),
        work,
        tx.batch_execute("RELEASE SAVEPOINT pilotage_check")
    );
    saved?;
    if let Err(e) = done {
        let _ = tx.batch_execute("ROLLBACK TO SAVEPOINT pilotage_check").await;
        return Err(e.into());
    }
    released?;
    let Some(table) = &c.estimated else { return Ok(None) };
    let rows = estimate(tx, &c.pg_sql).await;
    let whole = estimate(tx, &format!("SELECT FROM {}.{}", ident(schema), ident(table))).await;
    Ok(rows.zip(whole).map(|(rows, table)| Estimate { rows, table }))
}

/// `EXPLAIN (FORMAT JSON)`'s estimate of the rows the statement touches (never ANALYZE); a
/// statement it cannot explain has none.
async fn estimate(tx: &Transaction<'_>, sql: &str) -> Option<f64> {
    let explain = format!("EXPLAIN (FORMAT JSON) {sql}");
    let (saved, explained, released) = tokio::join!(
        tx.batch_execute("SAVEPOINT pilotage_estimate"),
        tx.simple_query(&explain),
        tx.batch_execute("RELEASE SAVEPOINT pilotage_estimate")
    );
    if saved.is_err() || released.is_err() {
        let _ = tx.batch_execute("ROLLBACK TO SAVEPOINT pilotage_estimate").await;
    }
    let text = explained.ok()?.into_iter().find_map(|m| match m {
        SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
        _ => None,
    })?;
    let plan: Json = serde_json::from_str(&text).ok()?;
    let top = &plan[0]["Plan"];
    // ModifyTable's own estimate is 0 rows: the rows it modifies are its input's.
    top["Plans"][0]["Plan Rows"].as_f64().or_else(|| top["Plan Rows"].as_f64())
}

/// PostgreSQL's error for one statement as a diagnostic: the SQLSTATE's code, at the token of
/// its position (else at the relation it names, else over the statement).
pub(super) fn report(
    src: &Source<'_>,
    stmt: &Statement,
    c: &Checked,
    e: &PgError,
    v: &mut Validation<PgCode, PgRisk>,
) {
    let at = e
        .position
        .and_then(|p| c.byte_of(p))
        .map(|b| {
            dotted(src, stmt, b, &e.message)
                .or_else(|| stmt.token_covering(src, b).map(token_range))
                .unwrap_or_else(|| {
                    let l = src.location_of(b);
                    range(l, Location { line: l.line, column: l.column + 1 })
                })
        })
        .or_else(|| {
            c.spans
                .iter()
                .find(|(n, _)| {
                    e.message.contains(&format!("\"{n}\"")) || e.message.ends_with(&format!(" {n}"))
                })
                .map(|(_, s)| span_range(*s))
        })
        .unwrap_or(stmt.range);
    let code = match e.code.as_str() {
        "42601" => Some(PgCode::SyntaxError),
        "42P01" => Some(PgCode::UnknownTable),
        "42703" => Some(PgCode::UnknownColumn),
        "42702" | "42725" => Some(PgCode::AmbiguousColumn),
        "42883" => Some(PgCode::UnknownFunction),
        "42501" => Some(PgCode::PermissionDenied),
        "42804" | "42846" | "22P02" | "22003" | "22007" | "22008" | "42P18" => Some(PgCode::TypeMismatch),
        "55000" | "42809" => Some(PgCode::NotWritable),
        "42P07" | "42710" => Some(PgCode::AlreadyExists),
        _ => None,
    };
    let message = format!("PostgreSQL ({}): {}", e.code, e.message);
    let d = match code {
        Some(code) => v.error(code, at, message),
        None => v.constraint(at, message),
    };
    if let Some(h) = e.hint.as_ref().or(e.detail.as_ref()) {
        d.hint(h.clone());
    }
}

/// For "column c.nmae does not exist", the range of the whole dotted reference starting at
/// program byte `at` (PostgreSQL's position is its first part's).
fn dotted(src: &Source<'_>, stmt: &Statement, at: usize, message: &str) -> Option<TextRange> {
    let name = message.strip_prefix("column ")?.strip_suffix(" does not exist")?;
    let parts = name.split('.').count();
    if parts < 2 {
        return None;
    }
    let tokens: Vec<_> = stmt.tokens.iter().filter(|t| significant(t)).collect();
    let first =
        tokens.iter().position(|t| src.byte_at(t.span.start) <= at && at < src.byte_at(t.span.end))?;
    let last = tokens.get(first + 2 * (parts - 1))?;
    Some(range(tokens[first].span.start, last.span.end))
}

impl Checked {
    /// The program byte of PostgreSQL's 1-based character `position` in `pg_sql`.
    fn byte_of(&self, position: usize) -> Option<usize> {
        let p = position.checked_sub(1)?;
        let mut delta: isize = 0;
        let mut original = None;
        for &(at, pg_len, len) in &self.shifts {
            if p >= at + pg_len {
                delta += len as isize - pg_len as isize;
            } else if p >= at {
                original = Some((at as isize + delta) as usize);
                break;
            } else {
                break;
            }
        }
        let chars = original.unwrap_or((p as isize + delta).max(0) as usize);
        let within = self.sql.char_indices().nth(chars).map(|(b, _)| b).unwrap_or(self.sql.len());
        Some(self.start_byte + within)
    }
}
