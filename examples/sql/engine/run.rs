//! Execution: the program is checked again exactly as validation checks it (same statements,
//! same identifiers), `input` is bound to the `:name` placeholders, and the statements run in
//! order inside one transaction. Each statement records one trace step (`stmt-N`, with its
//! SQL and parameters as input and its rows or change count as output), followed by one step
//! per table reference (`stmt-N.ref-K`, calling the entry). The first failing statement ends
//! the run and rolls the whole transaction back.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pilotage::engine::{Budget, Failure};
use pilotage::prelude::*;
use rusqlite::types::Value as SqlValue;
use rusqlite::ErrorCode;

use super::check::{self, Access};
use super::db::{cell, Db};
use super::placeholders::bind;
use super::text::Statement;
use super::{SqlCode, SqlRisk, SqlStatus};

/// Rows one statement's output carries at most; `more_rows: true` says some were left unread.
pub const ROW_LIMIT: usize = 1000;

/// Statements still running this long after the run started are interrupted (`timeout`).
pub const TIME_LIMIT: Duration = Duration::from_secs(5);

fn access_name(a: Access) -> &'static str {
    match a {
        Access::Read => "read",
        Access::Insert => "insert",
        Access::Update => "update",
        Access::Delete => "delete",
        Access::Drop => "drop",
    }
}

fn sql_value(v: &Json) -> SqlValue {
    match v {
        Json::Null => SqlValue::Null,
        Json::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Json::Number(n) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => SqlValue::Real(n.as_f64().unwrap_or(0.0)),
        },
        Json::String(s) => SqlValue::Text(s.clone()),
        other => SqlValue::Text(other.to_string()),
    }
}

/// Run one statement; its output, or the failure status and message.
fn statement(
    db: &Db,
    stmt: &Statement,
    params: &serde_json::Map<String, Json>,
) -> Result<Json, (Failure<SqlStatus>, String)> {
    let fail = |e: rusqlite::Error| {
        let status = match e.sqlite_error_code() {
            Some(ErrorCode::ConstraintViolation) => Failure::Engine(SqlStatus::ConstraintViolated),
            Some(ErrorCode::OperationInterrupted) => Failure::Engine(SqlStatus::Timeout),
            _ => Failure::Error,
        };
        let message = match (&e, status) {
            (_, Failure::Engine(SqlStatus::Timeout))
                if pilotage::engine::Signal::current().is_cancelled() =>
            {
                "interrupted at the run's time bound".to_owned()
            }
            (_, Failure::Engine(SqlStatus::Timeout)) => {
                format!("interrupted after {}s", TIME_LIMIT.as_secs())
            }
            (rusqlite::Error::SqliteFailure(_, Some(m)), _) => m.clone(),
            (other, _) => other.to_string(),
        };
        (status, message)
    };
    let mut st = db.conn.prepare_cached(&stmt.sql).map_err(fail)?;
    for name in stmt.parameter_names() {
        if let Some(i) = st.parameter_index(&format!(":{name}")).map_err(fail)? {
            st.raw_bind_parameter(i, sql_value(params.get(&name).unwrap_or(&Json::Null))).map_err(fail)?;
        }
    }
    let n = st.column_count();
    if n == 0 {
        let changes = st.raw_execute().map_err(fail)?;
        return Ok(json!({"changes": changes}));
    }
    let columns: Vec<String> = st.column_names().into_iter().map(str::to_owned).collect();
    let budget = Budget::current();
    let mut rows = st.raw_query();
    let mut out = Vec::new();
    let mut more = false;
    while let Some(row) = rows.next().map_err(fail)? {
        if out.len() == ROW_LIMIT {
            more = true;
            break;
        }
        let cells: Vec<Json> =
            (0..n).map(|i| row.get_ref(i).map(cell)).collect::<Result<_, _>>().map_err(fail)?;
        let row = Json::Array(cells);
        // Each row read is held until the run ends: charged to the run's byte budget, so many
        // large rows end the run at its memory bound instead of building an unbounded answer.
        if !budget.charge_value(&row) {
            let message = format!(
                "the rows read so far exceed the run's memory bound of {} bytes (after {} rows)",
                budget.limit(),
                out.len()
            );
            return Err((Failure::Partial, message));
        }
        out.push(row);
    }
    let mut output = json!({"columns": columns, "rows": out});
    if more {
        output["more_rows"] = json!(true);
    }
    Ok(output)
}

/// Execute a program that passed validation. Returns how the run ends and whether the
/// schema changed (a committed DROP TABLE).
pub fn execute(db: &Mutex<Db>, program: &Json, run: &mut Run<SqlStatus>) -> (Finish<SqlStatus>, bool) {
    let db = db.lock().unwrap_or_else(|p| p.into_inner());
    // The check of this program's validation, when the catalog and the schema have not moved
    // since (`kept.rs`); checked again otherwise.
    let schema = db.schema_version();
    let checked = match schema.and_then(|schema| db.checks.get(program, run.catalog(), schema)) {
        Some(checked) => checked,
        None => {
            let mut v = Validation::<SqlCode, SqlRisk>::new(&run.validation_request());
            let checked = check::check(&db, schema, program, &mut v);
            if v.has_errors() {
                return (Finish::error("the program no longer validates against this database"), false);
            }
            Arc::new(checked)
        }
    };
    let mut names: Vec<String> = Vec::new();
    for (stmt, _) in checked.iter() {
        for n in stmt.parameter_names() {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    let input = run.input().cloned();
    let Some(params) = bind(&names, input.as_ref(), run) else {
        return (Finish::error("the input does not bind"), false);
    };

    if let Err(e) = db.control("BEGIN IMMEDIATE") {
        return (Finish::error(format!("cannot open the transaction: {e}")), false);
    }
    let rollback = |db: &Db| {
        let _ = db.control("ROLLBACK");
        db.set_deadline(None);
    };
    db.set_deadline(Some(Instant::now() + TIME_LIMIT));
    let mut last = Json::Null;
    let mut drops = false;
    for (i, (stmt, analysis)) in checked.iter().enumerate() {
        if run.should_stop() {
            rollback(&db);
            return (
                Finish::partial(format!("stopped before {} at the run's bound; the transaction was rolled back: no change persists", stmt.id)),
                false,
            );
        }
        let used: serde_json::Map<String, Json> = stmt
            .parameter_names()
            .into_iter()
            .filter_map(|n| params.get(&n).map(|v| (n, v.clone())))
            .collect();
        let input = json!({"sql": stmt.sql, "params": used});
        match statement(&db, stmt, &params) {
            Ok(output) => {
                // Only the last statement's output is the run's: the others move into their
                // step uncopied.
                let (recorded, output) =
                    if i + 1 == checked.len() { (output.clone(), output) } else { (output, Json::Null) };
                run.step(&stmt.id).input(input).output(recorded).succeeded();
                for (k, r) in analysis.refs.iter().enumerate() {
                    run.step(&format!("{}.ref-{}", stmt.id, k + 1))
                        .calls(r.entry.clone())
                        .input(json!({"access": access_name(r.access)}))
                        .succeeded();
                }
                drops |= analysis.drops;
                last = output;
            }
            Err((status, message)) => {
                run.step(&stmt.id).input(input).failed(status, message.clone());
                rollback(&db);
                let summary = format!(
                    "{} failed: {message}; the transaction was rolled back: no change persists",
                    stmt.id
                );
                let finish = if i == 0 { Finish::error(summary) } else { Finish::partial(summary) };
                return (finish, false);
            }
        }
    }
    db.set_deadline(None);
    if let Err(e) = db.control("COMMIT") {
        rollback(&db);
        return (
            Finish::partial(format!(
                "the commit failed: {e}; the transaction was rolled back: no change persists"
            )),
            false,
        );
    }
    (Finish::output(last), drops)
}
