//! Execution: the program is analyzed again as validation's first pass does (same statements,
//! same identifiers, the caller's role; the runtime admitted it against the caller's current
//! catalog version, and PostgreSQL prepares each statement as it runs), `input` is bound to the `:name` placeholders, and the
//! statements run in order inside one transaction as the caller's role, under a
//! `statement_timeout` no longer than the run's own time left. A run that must stop (its
//! deadline, a cancellation, its step bound) cancels the running statement server-side with
//! the connection's cancel token, and so does a run the runtime drops (its [`Session`]'s drop,
//! which also closes the connection and terminates a backend that does not stop). Each statement records
//! one trace step (`stmt-N`: its SQL and parameters in, a bounded sample of its rows or its
//! change count out), then one step per relation or function it reaches (`stmt-N.ref-K`). The
//! first failing statement ends the run and rolls everything back.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use pilotage::engine::run::StopSignal;
use pilotage::engine::{Budget, Failure, Signal};
use pilotage::prelude::*;
use tokio_postgres::types::ToSql;
use tokio_postgres::{CancelToken, NoTls};

use super::catalog;
use super::check::{self, Checked};
use super::db::{Db, PgError};
use super::placeholders::bind;
use super::session::{Session, Tx, MOVED_CODE};
use super::values::{Cell, Text};
use super::{PgCode, PgRisk, PgStatus};

/// Rows one statement's output carries at most; `more_rows: true` says there were more.
pub const ROW_LIMIT: usize = 1000;

/// Rows of each statement the trace keeps (its `row_count` counts them all).
pub const SAMPLE_ROWS: usize = 20;

/// The longest `statement_timeout` of a run (shorter when the run has less time left).
pub const TIME_LIMIT: Duration = Duration::from_secs(5);

/// How often a running statement looks at the run's stop signal.
const POLL: Duration = Duration::from_millis(20);

/// Cancels the connection's running statement on the server.
pub(crate) struct Canceller {
    pub db: Arc<Db>,
    pub token: CancelToken,
}

impl Canceller {
    fn cancel(&self) {
        let token = self.token.clone();
        self.db.spawn(async move {
            let _ = token.cancel_query(NoTls).await;
        });
    }
}

/// How a statement failed.
pub(crate) struct Failed {
    pub error: PgError,
    /// The run's stop signal fired while it ran (and cancelled it).
    pub stopped: bool,
}

impl From<tokio_postgres::Error> for Failed {
    fn from(e: tokio_postgres::Error) -> Self {
        Failed { error: e.into(), stopped: false }
    }
}

/// Await `work`, cancelling it server-side once the run must stop.
pub(crate) async fn watched<T>(
    work: impl Future<Output = Result<T, Failed>>,
    guard: &Canceller,
    stop: Option<&StopSignal>,
    signal: &Signal,
) -> Result<T, Failed> {
    tokio::pin!(work);
    let mut fired = false;
    loop {
        tokio::select! {
            out = &mut work => return out.map_err(|mut f| { f.stopped |= fired; f }),
            _ = tokio::time::sleep(POLL), if !fired => {
                if stop.is_some_and(StopSignal::is_set) || signal.is_cancelled() {
                    fired = true;
                    guard.cancel();
                }
            }
        }
    }
}

/// Run one checked statement; its output (rows up to [`ROW_LIMIT`]) and its trace output
/// (the first [`SAMPLE_ROWS`]).
async fn statement(
    tx: &Tx<'_>,
    c: &Checked,
    cacheable: bool,
    params: &[Text],
) -> Result<(Json, Json), Failed> {
    if c.ddl {
        tx.batch_execute(&c.pg_sql).await?;
        let out = json!({"done": true});
        return Ok((out.clone(), out));
    }
    // A query's rows are bounded in PostgreSQL by a LIMIT around it, which stops the executor
    // at the bound as a portal's row count does, without the portal's extra round trip (its
    // `Bind` is answered before its `Execute` is sent).
    let sql = if c.query { bounded(&c.pg_sql) } else { c.pg_sql.clone() };
    let st = if cacheable { tx.prepare_cached(&sql).await? } else { tx.prepare(&sql).await? };
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
    if st.columns().is_empty() {
        let n = tx.execute(&st, &refs).await?;
        let out = json!({"changes": n});
        return Ok((out.clone(), out));
    }
    let columns: Vec<&str> = st.columns().iter().map(|c| c.name()).collect();
    // Rows past the bound of a statement that is not a query (`... RETURNING`) are read off the
    // connection and dropped: the statement's work is done by then whatever is kept.
    let stream = tx.query_raw(&st, refs.iter().copied()).await?;
    futures::pin_mut!(stream);
    let budget = Budget::current();
    let mut rows = Vec::new();
    let mut more = false;
    while let Some(row) = stream.try_next().await? {
        if rows.len() == ROW_LIMIT {
            more = true;
            break;
        }
        let cells: Vec<Json> =
            (0..columns.len()).map(|i| row.try_get::<_, Cell>(i).map(|c| c.0)).collect::<Result<_, _>>()?;
        let row = Json::Array(cells);
        // Rows are held until the run ends: charged to the run's byte budget, so large rows end
        // the run at its memory bound instead of building an unbounded answer.
        if !budget.charge_value(&row) {
            let message = format!(
                "the rows read so far exceed the run's memory bound of {} bytes (after {} rows)",
                budget.limit(),
                rows.len()
            );
            return Err(Failed {
                error: PgError { code: "53200".into(), message, ..PgError::default() },
                stopped: false,
            });
        }
        rows.push(row);
    }
    let sample: Vec<Json> = rows.iter().take(SAMPLE_ROWS).cloned().collect();
    let mut output = json!({"columns": columns, "rows": rows});
    let mut trace = json!({"columns": columns, "rows": sample, "row_count": rows.len()});
    if more {
        output["more_rows"] = json!(true);
        trace["more_rows"] = json!(true);
    }
    Ok((output, trace))
}

/// `query` bounded to [`ROW_LIMIT`] + 1 rows (one more than kept, to tell `more_rows`), on lines
/// of its own so that a trailing `--` comment ends before the bound.
fn bounded(query: &str) -> String {
    format!("SELECT * FROM (\n{query}\n) AS pilotage_rows LIMIT {}", ROW_LIMIT + 1)
}

/// The failure status and message of a failed statement of a run that waited `queued` for its
/// engine slot and connection (said with a timeout, so the wait is not mistaken for the
/// statement's time).
fn failure(f: &Failed, timeout: Duration, queued: Duration) -> (Failure<PgStatus>, String) {
    let e = &f.error;
    let waited = match queued.as_millis() {
        0 => String::new(),
        ms => format!(", after {ms} ms queued for a connection"),
    };
    match e.code.as_str() {
        "57014" if f.stopped => (
            Failure::Engine(PgStatus::Timeout),
            format!("cancelled on the server at the run's bound{waited}"),
        ),
        "57014" => (
            Failure::Engine(PgStatus::Timeout),
            format!("cancelled by statement_timeout after {} ms{waited}", timeout.as_millis()),
        ),
        "53200" => (Failure::Partial, e.message.clone()),
        "42501" => {
            (Failure::Engine(PgStatus::PermissionDenied), format!("PostgreSQL (42501): {}", e.message))
        }
        c if c.starts_with("23") => {
            (Failure::Engine(PgStatus::ConstraintViolated), format!("PostgreSQL ({c}): {}", e.message))
        }
        "" => (Failure::Error, e.message.clone()),
        c => (Failure::Error, format!("PostgreSQL ({c}): {}", e.message)),
    }
}

/// The statement timeout of a run with `remaining` time: [`TIME_LIMIT`] at most, and short
/// enough before the run's deadline (a fifth of the time left, up to half a second) that the
/// cancelled statement is still recorded in the trace.
fn statement_timeout(remaining: Option<Duration>) -> Duration {
    let Some(left) = remaining else { return TIME_LIMIT };
    let margin = (left / 5).min(Duration::from_millis(500));
    left.saturating_sub(margin).min(TIME_LIMIT).max(Duration::from_millis(1))
}

/// Execute a program that passed validation.
pub async fn execute(db: &Arc<Db>, program: &Json, run: &mut Run<PgStatus>) -> Finish<PgStatus> {
    let request = run.validation_request();
    let mut v = Validation::<PgCode, PgRisk>::new(&request);
    let checked = check::analyzed(db, program, &mut v);
    if v.has_errors() {
        if run.catalog_unconfirmed() {
            // Against a kept snapshot that may be stale: admitted again against a current one.
            return run.catalog_moved();
        }
        return Finish::error("the program no longer validates against the database");
    }
    let mut names: Vec<String> = Vec::new();
    for n in checked.iter().flat_map(|c| &c.names) {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    let input = run.input().cloned();
    let Some(params) = bind(&names, input.as_ref(), run) else {
        return Finish::error("the input does not bind");
    };
    let signal = Signal::current();
    let role = match db.roles.of(run.caller()) {
        Ok(role) => role,
        Err(e) => return Finish::error(e.message),
    };
    // A snapshot the engine kept without its stamp's round trip is confirmed by a guard sent
    // with the prologue: when it moved, nothing runs and the runtime tries again.
    let confirm = match run.catalog().filter(|_| run.catalog_unconfirmed()) {
        Some(snapshot) => match db.stamp_at(role.as_deref(), snapshot.version()) {
            Some(kept) => Some(catalog::guard_sql(&db.schema, role.as_deref(), &kept)),
            None => return run.catalog_moved(),
        },
        None => None,
    };
    // Dropped before it ends (the run's bound, the client gone), the session cancels its
    // statement on the server and closes its connection.
    let asked = std::time::Instant::now();
    let mut session = match Session::connect(db).await {
        Ok(s) => s,
        Err(e) => return Finish::error(e.message),
    };
    // The wait for the connection is reported with the wait for the engine slot (the trace's
    // `stats.queued_ms`); neither is the statements' time.
    run.waited(asked.elapsed());
    let queued = run.queued();
    // The statement timeout is set once the connection is there: waiting for it is not the
    // statement's time.
    let timeout = statement_timeout(signal.remaining());
    let guard = Canceller { db: db.clone(), token: session.cancel_token() };
    // A program that only reads runs in a READ ONLY transaction, which PostgreSQL enforces.
    let read_only = checked
        .iter()
        .all(|c| !c.ddl && c.risk == PgRisk::Safe && c.refs.iter().all(|r| r.risk == PgRisk::Safe));
    // Begun by its prologue, sent with the first statement: one round trip for both.
    let (tx, prologue) = match session.open(role.as_deref(), timeout, read_only, confirm.as_deref()).await {
        Ok(began) => began,
        Err(e) => return Finish::error(e.message),
    };
    // Sent with the first statement (one round trip); when it fails, so does the statement.
    let mut prologue = Some(prologue);
    let stop = run.stop_signal();
    let cacheable = !checked.iter().any(|c| c.ddl);
    let mut last = Json::Null;
    for (i, c) in checked.iter().enumerate() {
        if run.should_stop() {
            if tx.rollback().await.is_ok() {
                session.ended();
            }
            return Finish::partial(format!(
                "stopped before {} at the run's bound; the transaction was rolled back: no change persists",
                c.id
            ));
        }
        let values: Vec<Text> =
            c.names.iter().map(|n| Text::of(params.get(n).unwrap_or(&Json::Null))).collect();
        let used: serde_json::Map<String, Json> =
            c.names.iter().filter_map(|n| params.get(n).map(|v| (n.clone(), v.clone()))).collect();
        // The step's clock starts with the statement: its t_ms is the statement's time.
        let step = run.step(&c.id).input(json!({"sql": c.sql, "params": used}));
        let work = watched(statement(&tx, c, cacheable, &values), &guard, Some(&stop), &signal);
        let ran = match prologue.take() {
            Some(p) => {
                let (began, ran) = tokio::join!(p.check(&tx), work);
                if let Err(e) = began {
                    // Nothing ran: the statement failed behind the refused prologue.
                    drop(step);
                    if tx.rollback().await.is_ok() {
                        session.ended();
                    }
                    if e.code == MOVED_CODE {
                        return run.catalog_moved();
                    }
                    return Finish::error(e.message);
                }
                ran
            }
            None => work.await,
        };
        match ran {
            Ok((output, trace)) => {
                step.output(trace).succeeded();
                for (k, r) in c.refs.iter().enumerate() {
                    run.step(&format!("{}.ref-{}", c.id, k + 1))
                        .calls(r.entry.clone())
                        .input(json!({"access": r.access.name()}))
                        .succeeded();
                }
                last = output;
            }
            Err(f) => {
                let (status, message) = failure(&f, timeout, queued);
                step.failed(status, message.clone());
                // A statement the run's bound stopped leaves the session open: its drop closes
                // the connection after the cancel.
                if tx.rollback().await.is_ok() && !f.stopped {
                    session.ended();
                }
                let summary = format!(
                    "{} failed: {message}; the transaction was rolled back: no change persists",
                    c.id
                );
                return if i == 0 { Finish::error(summary) } else { Finish::partial(summary) };
            }
        }
    }
    if read_only {
        // Nothing to commit: the answer does not wait for the rollback.
        session.roll_back_later();
        return Finish::output(last);
    }
    let committed = tx.commit().await;
    session.ended();
    match committed {
        Ok(()) => Finish::output(last),
        Err(e) => Finish::partial(format!(
            "the commit failed: {}; the transaction was rolled back: no change persists",
            PgError::from(e)
        )),
    }
}
