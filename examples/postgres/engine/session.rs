//! One transaction as the caller: a pooled connection, `BEGIN`, then a prologue that sets the
//! caller's role, the served schema's `search_path`, the statement and lock timeouts, refuses
//! (on the server) a superuser or BYPASSRLS role, and reads back the backend's process id. The
//! prologue is sent with the transaction's first statement (pipelined: one round trip for both),
//! which it makes fail when it fails.
//!
//! A run begins its transaction with its prologue ([`Session::open`]: `START TRANSACTION` is the
//! prologue's first statement, so beginning costs no round trip of its own); a validation uses
//! tokio-postgres's `Transaction`, which waits for its `BEGIN` ([`Session::start`]).
//!
//! A [`Session`] that is dropped while its transaction is still open (the runtime dropped the
//! run at its time bound, or the client went away) stops its work on the server: the running
//! statement is cancelled with the connection's cancel token, the connection leaves the pool
//! (it is closed, never reused), and a backend still busy after [`GRACE`] is terminated.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Transaction;
use tokio_postgres::{CancelToken, NoTls};

use super::db::{ident, Db, PgError};

/// Prepared statements one connection keeps (its cache starts afresh past it).
pub const MAX_CACHED_STATEMENTS: usize = 256;

/// How long a cancelled statement may take to stop before its backend is terminated.
pub const GRACE: Duration = Duration::from_millis(250);

/// A pooled connection that opens the caller's transactions; see the module documentation.
pub struct Session {
    db: Arc<Db>,
    client: Option<deadpool_postgres::Object>,
    token: CancelToken,
    /// The backend's process id, once a prologue read it (0 before).
    pid: Arc<AtomicI32>,
    /// A transaction was begun and not yet committed or rolled back (shared with its
    /// [`Prologue`], whose failure ends it: the caller drops the transaction, which queues its
    /// rollback).
    open: Arc<AtomicBool>,
}

/// What a prologue that refuses its role raises: a cast of this text (and the role's name) to
/// an integer, which PostgreSQL refuses (SQLSTATE 22P02), aborting the transaction.
macro_rules! refused {
    () => {
        "pilotage: refused role "
    };
}
const REFUSED: &str = refused!();

/// The prologue of a transaction acting as `role` (`None`: the login role) on `schema` under
/// `timeout`, `READ ONLY` when `read_only`: the settings, sent in one simple query, followed by
/// [`check_sql`], a statement of its own.
fn prologue(schema: &str, role: Option<&str>, timeout: Duration, read_only: bool) -> String {
    let mut sql = String::new();
    if read_only {
        sql.push_str("SET TRANSACTION READ ONLY; ");
    }
    if let Some(role) = role {
        sql.push_str(&format!("SET LOCAL ROLE {}; ", ident(role)));
    }
    sql.push_str(&format!(
        "SET LOCAL search_path = {}; SET LOCAL statement_timeout = {}; SET LOCAL lock_timeout = {}",
        ident(schema),
        timeout.as_millis().max(1),
        timeout.as_millis().clamp(1, 2000),
    ));
    sql
}

/// The check that ends every prologue; its one row is the backend's pid. Unless `privileged`
/// roles are allowed, a superuser or BYPASSRLS role makes it fail on the server (and so every
/// statement sent after it in the same transaction): a caller may pipeline its first statement
/// behind the prologue without anything running as such a role. Prepared once per connection:
/// sent as text with the settings, it was planned again on every transaction (0.1-0.2 ms of
/// PostgreSQL's time, over the `pg_roles` view).
fn check_sql(privileged: bool) -> &'static str {
    if privileged {
        "SELECT pg_backend_pid()"
    } else {
        // Fail closed on the server: no row for a role that is not plainly unprivileged raises.
        concat!(
            "SELECT coalesce((SELECT pg_backend_pid() FROM pg_roles WHERE rolname = current_user ",
            "AND NOT (rolsuper OR rolbypassrls)), ('",
            refused!(),
            "' || current_user)::int)"
        )
    }
}

/// The code of a [`PgError`] that says a run's guard found the catalog moved: nothing ran.
pub const MOVED_CODE: &str = "pilotage-moved";

/// The prologue of a begun transaction, to send (see [`Session::start`]).
pub struct Prologue {
    db: Arc<Db>,
    role: Option<String>,
    sql: String,
    /// [`check_sql`], prepared on the connection.
    check: tokio_postgres::Statement,
    /// The catalog guard ([`super::catalog::guard_sql`]) of a run whose snapshot is not proven
    /// current, prepared on the connection: sent after the check.
    guard: Option<tokio_postgres::Statement>,
    pid: Arc<AtomicI32>,
    open: Arc<AtomicBool>,
    /// It begins the transaction itself ([`Session::open`]): refused, it leaves the transaction
    /// open for the caller to roll back (or the session's drop to close the connection).
    begins: bool,
}

/// Who begins a prologue's transaction.
#[derive(Clone, Copy)]
enum Begun<'a> {
    /// tokio-postgres's `Transaction`, awaited before the prologue ([`Session::start`]).
    ByClient,
    /// The prologue itself, followed by its catalog guard when given ([`Session::open`]).
    ByPrologue { guard: Option<&'a str> },
}

/// A transaction that its prologue begins ([`Session::open`]). Statements go to the connection
/// as in any transaction; it ends with [`Tx::commit`] or [`Tx::rollback`] (then
/// [`Session::ended`]), or with [`Session::roll_back_later`], or with the session's drop, which
/// closes the connection.
pub struct Tx<'a> {
    client: &'a deadpool_postgres::ClientWrapper,
}

impl std::ops::Deref for Tx<'_> {
    type Target = deadpool_postgres::ClientWrapper;

    fn deref(&self) -> &Self::Target {
        self.client
    }
}

impl Tx<'_> {
    /// Commit (one round trip).
    pub async fn commit(self) -> Result<(), tokio_postgres::Error> {
        self.client.batch_execute("COMMIT").await
    }

    /// Roll back (one round trip).
    pub async fn rollback(self) -> Result<(), tokio_postgres::Error> {
        self.client.batch_execute("ROLLBACK").await
    }
}

impl Prologue {
    /// Send the prologue on `tx` and check its answer: a role the login may not assume, or a
    /// superuser or BYPASSRLS role (unless the server allows them), is refused with SQLSTATE
    /// 42501; the outcome is remembered for the role (see [`Db::refusal`]). Statements sent on
    /// `client` while this is awaited follow it on the server, and fail when it fails.
    pub async fn check(&self, client: &tokio_postgres::Client) -> Result<(), PgError> {
        let role = self.role.as_deref();
        let who = || {
            role.map_or_else(|| "the login role".to_owned(), |r| format!("the caller's database role {r:?}"))
        };
        let privileged = || {
            PgError::refused(format!(
                "{} is a superuser or bypasses row security: refused (a server started with --allow-superuser would serve it)",
                who()
            ))
        };
        // All go out at once, the settings first: the check and the guard run as the role they
        // set.
        let guard = async {
            match &self.guard {
                Some(guard) => client.query_opt(guard, &[]).await.map(|_| ()),
                None => Ok(()),
            }
        };
        let (set, checked, guarded) =
            tokio::join!(client.batch_execute(&self.sql), client.query_opt(&self.check, &[]), guard);
        let answer = match set.and(checked) {
            Ok(row) => row,
            Err(e) => {
                let mut e = PgError::from(e);
                if e.message.contains(REFUSED) {
                    e = privileged();
                } else if let Some(role) = role.filter(|_| !e.code.is_empty()) {
                    e = PgError::refused(format!(
                        "the caller's database role {role:?} cannot be assumed: {}",
                        e.message
                    ));
                }
                self.db.remember_refusal(role, Some(&e));
                self.refused();
                return Err(e);
            }
        };
        let pid = answer.and_then(|row| row.try_get::<_, i32>(0).ok());
        // Fail closed: no answer is a privileged role.
        let Some(pid) = pid else {
            let e = privileged();
            self.db.remember_refusal(role, Some(&e));
            self.refused();
            return Err(e);
        };
        self.pid.store(pid, Ordering::Relaxed);
        self.db.remember_refusal(role, None);
        guarded.map_err(|e| {
            let e = PgError::from(e);
            if e.message.contains(super::catalog::MOVED) {
                PgError { code: MOVED_CODE.to_owned(), ..e }
            } else {
                e
            }
        })
    }

    /// The prologue was refused: a `Transaction` the caller drops queues its own rollback, so
    /// the session has nothing left open; a transaction the prologue began stays open.
    fn refused(&self) {
        if !self.begins {
            self.open.store(false, Ordering::Relaxed);
        }
    }
}

impl Session {
    /// A session on `client`, a connection of `db`'s pool.
    pub fn new(db: Arc<Db>, client: deadpool_postgres::Object) -> Session {
        let token = client.cancel_token();
        Session { db, client: Some(client), token, pid: Arc::new(AtomicI32::new(0)), open: Arc::default() }
    }

    /// A session on a new pooled connection.
    pub async fn connect(db: &Arc<Db>) -> Result<Session, PgError> {
        Ok(Session::new(db.clone(), db.client().await?))
    }

    /// The token that cancels this connection's running statement.
    pub fn cancel_token(&self) -> CancelToken {
        self.token.clone()
    }

    /// Begin a transaction acting as `role` (`None`: the login role) under `timeout`, its
    /// prologue sent and checked (see [`Prologue::check`]).
    pub async fn begin(&mut self, role: Option<&str>, timeout: Duration) -> Result<Transaction<'_>, PgError> {
        let (tx, prologue) = self.start(role, timeout, false).await?;
        prologue.check(tx.client()).await?;
        Ok(tx)
    }

    /// Begin a transaction (one round trip) whose prologue (acting as `role` under `timeout`,
    /// read only when `read_only`) the caller sends with [`Prologue::check`], pipelined with
    /// its first statement: the two go out together and PostgreSQL runs them in order.
    pub async fn start(
        &mut self,
        role: Option<&str>,
        timeout: Duration,
        read_only: bool,
    ) -> Result<(Transaction<'_>, Prologue), PgError> {
        let prologue = self.prologue(role, timeout, read_only, Begun::ByClient).await?;
        let client = self.client.as_mut().ok_or_else(|| PgError::other("the connection is closed"))?;
        Ok((client.transaction().await?, prologue))
    }

    /// A transaction (no round trip) that the returned prologue begins, acting as `role` under
    /// `timeout`, read only when `read_only`, its catalog confirmed by `guard` (a
    /// [`super::catalog::guard_sql`]) when given: the caller sends it with [`Prologue::check`]
    /// pipelined with its first statement, which fails when the prologue fails.
    pub async fn open(
        &mut self,
        role: Option<&str>,
        timeout: Duration,
        read_only: bool,
        guard: Option<&str>,
    ) -> Result<(Tx<'_>, Prologue), PgError> {
        let prologue = self.prologue(role, timeout, read_only, Begun::ByPrologue { guard }).await?;
        let client = self.client.as_ref().ok_or_else(|| PgError::other("the connection is closed"))?;
        Ok((Tx { client }, prologue))
    }

    /// The prologue of a transaction about to begin (see [`Session::start`] and
    /// [`Session::open`]), its check and guard
    /// prepared (a round trip the first time on a connection) before the session counts as
    /// open, so that a failed prepare leaves the connection poolable; the connection's
    /// statement cache kept within its bound.
    async fn prologue(
        &mut self,
        role: Option<&str>,
        timeout: Duration,
        read_only: bool,
        begun: Begun<'_>,
    ) -> Result<Prologue, PgError> {
        let db = self.db.clone();
        let mut sql = prologue(&db.schema, role, timeout, read_only);
        if let Begun::ByPrologue { .. } = begun {
            sql.insert_str(0, "START TRANSACTION; ");
        }
        let client = self.client.as_ref().ok_or_else(|| PgError::other("the connection is closed"))?;
        if client.statement_cache.size() > MAX_CACHED_STATEMENTS {
            client.statement_cache.clear();
        }
        let check = client.prepare_cached(check_sql(db.roles.allow_superuser)).await?;
        let guard = match begun {
            Begun::ByPrologue { guard: Some(guard) } => Some(client.prepare_cached(guard).await?),
            _ => None,
        };
        self.open.store(true, Ordering::Relaxed);
        let (role, pid, open) = (role.map(str::to_owned), self.pid.clone(), self.open.clone());
        Ok(Prologue {
            sql,
            role,
            check,
            guard,
            pid,
            open,
            db,
            begins: matches!(begun, Begun::ByPrologue { .. }),
        })
    }

    /// End the open transaction after the answer: a task of the database's runtime sends its
    /// `ROLLBACK`, then gives the connection back to the pool (or closes it, when the rollback
    /// fails).
    pub fn roll_back_later(&mut self) {
        let Some(client) = self.client.take() else { return };
        self.open.store(false, Ordering::Relaxed);
        self.db.spawn(async move {
            if client.batch_execute("ROLLBACK").await.is_err() {
                drop(deadpool_postgres::Object::take(client));
            }
        });
    }

    /// The transaction was committed or rolled back (or dropped, which queues its rollback
    /// ahead of the connection's next use): the connection goes back to the pool clean when
    /// the session drops.
    pub fn ended(&mut self) {
        self.open.store(false, Ordering::Relaxed);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.open.load(Ordering::Relaxed) {
            return;
        }
        // Dropped mid-transaction: stop the work on the server, and never reuse the connection.
        let Some(client) = self.client.take() else { return };
        let client = deadpool_postgres::Object::take(client);
        let (token, db) = (self.token.clone(), self.db.clone());
        let pid = Some(self.pid.load(Ordering::Relaxed)).filter(|p| *p != 0);
        let pool_db = db.clone();
        db.spawn(async move {
            let _ = token.cancel_query(NoTls).await;
            // The transaction's own drop queued a ROLLBACK: an answer to this query after it
            // means the backend is idle again.
            let stopped = tokio::time::timeout(GRACE, client.simple_query("SELECT 1")).await;
            drop(client);
            if !matches!(stopped, Ok(Ok(_))) {
                if let Some(pid) = pid {
                    pool_db.terminate(pid).await;
                }
            }
        });
    }
}
