//! One transaction as the caller: a pooled connection, `BEGIN`, then one prologue round trip
//! that sets the caller's role, the served schema's `search_path`, the statement and lock
//! timeouts, and reads back whether the role is a superuser (or bypasses row security) and
//! the backend's process id.
//!
//! A [`Session`] that is dropped while its transaction is still open (the runtime dropped the
//! run at its time bound, or the client went away) stops its work on the server: the running
//! statement is cancelled with the connection's cancel token, the connection leaves the pool
//! (it is closed, never reused), and a backend still busy after [`GRACE`] is terminated.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Transaction;
use tokio_postgres::{CancelToken, NoTls, SimpleQueryMessage};

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
    /// The backend's process id, once a prologue read it.
    pid: Option<i32>,
    /// A transaction was begun and not yet committed or rolled back.
    open: bool,
}

/// The prologue of a transaction acting as `role` (`None`: the login role) on `schema` under
/// `timeout`; its one row is (superuser or BYPASSRLS, backend pid).
fn prologue(schema: &str, role: Option<&str>, timeout: Duration) -> String {
    let mut sql = String::new();
    if let Some(role) = role {
        sql.push_str(&format!("SET LOCAL ROLE {}; ", ident(role)));
    }
    sql.push_str(&format!(
        "SET LOCAL search_path = {}; SET LOCAL statement_timeout = {}; SET LOCAL lock_timeout = {}; \
         SELECT rolsuper OR rolbypassrls, pg_backend_pid() FROM pg_roles WHERE rolname = current_user",
        ident(schema),
        timeout.as_millis().max(1),
        timeout.as_millis().clamp(1, 2000),
    ));
    sql
}

impl Session {
    /// A session on `client`, a connection of `db`'s pool.
    pub fn new(db: Arc<Db>, client: deadpool_postgres::Object) -> Session {
        let token = client.cancel_token();
        Session { db, client: Some(client), token, pid: None, open: false }
    }

    /// A session on a new pooled connection.
    pub async fn connect(db: &Arc<Db>) -> Result<Session, PgError> {
        Ok(Session::new(db.clone(), db.client().await?))
    }

    /// The token that cancels this connection's running statement.
    pub fn cancel_token(&self) -> CancelToken {
        self.token.clone()
    }

    /// Begin a transaction acting as `role` (`None`: the login role) under `timeout`. A role
    /// the login may not assume, or a superuser or BYPASSRLS role (unless the server allows
    /// them), is refused with SQLSTATE 42501; the outcome is remembered for the role (see
    /// [`Db::refusal`]).
    pub async fn begin(&mut self, role: Option<&str>, timeout: Duration) -> Result<Transaction<'_>, PgError> {
        let client = self.client.as_mut().ok_or_else(|| PgError::other("the connection is closed"))?;
        if client.statement_cache.size() > MAX_CACHED_STATEMENTS {
            client.statement_cache.clear();
        }
        self.open = true;
        let tx = client.transaction().await?;
        let answer = match tx.simple_query(&prologue(&self.db.schema, role, timeout)).await {
            Ok(messages) => messages,
            Err(e) => {
                let mut e = PgError::from(e);
                if let Some(role) = role.filter(|_| !e.code.is_empty()) {
                    e = PgError::refused(format!(
                        "the caller's database role {role:?} cannot be assumed: {}",
                        e.message
                    ));
                }
                if tx.rollback().await.is_ok() {
                    self.open = false;
                }
                self.db.remember_refusal(role, Some(&e));
                return Err(e);
            }
        };
        let row = answer.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r),
            _ => None,
        });
        self.pid = row.and_then(|r| r.get(1)).and_then(|p| p.parse().ok());
        // Fail closed: no answer is a privileged role.
        let privileged = row.and_then(|r| r.get(0)) != Some("f");
        if privileged && !self.db.roles.allow_superuser {
            let who = role
                .map_or_else(|| "the login role".to_owned(), |r| format!("the caller's database role {r:?}"));
            let e = PgError::refused(format!(
                "{who} is a superuser or bypasses row security: refused (a server started with --allow-superuser would serve it)"
            ));
            if tx.rollback().await.is_ok() {
                self.open = false;
            }
            self.db.remember_refusal(role, Some(&e));
            return Err(e);
        }
        self.db.remember_refusal(role, None);
        Ok(tx)
    }

    /// The transaction was committed or rolled back: the connection goes back to the pool
    /// clean when the session drops.
    pub fn ended(&mut self) {
        self.open = false;
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.open {
            return;
        }
        // Dropped mid-transaction: stop the work on the server, and never reuse the connection.
        let Some(client) = self.client.take() else { return };
        let client = deadpool_postgres::Object::take(client);
        let (token, pid, db) = (self.token.clone(), self.pid, self.db.clone());
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
