//! The shared database: one connection pool for every session and the engine's own small
//! runtime, the caller → role mapping (failing closed), and the roles refused lately. The
//! transaction every validation, run and catalog read opens is `session.rs`'s; what a role sees
//! of the schema is `catalog.rs`'s.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use pilotage::engine::Signal;
use pilotage::prelude::*;
use tokio_postgres::NoTls;

/// The claim of a verified caller that names its database role, unless configured otherwise.
pub const DEFAULT_ROLE_CLAIM: &str = "pg_role";

/// Refused roles, and roles' catalogs, remembered at most (each map starts afresh past it).
const MAX_REFUSALS: usize = 1024;

/// Statements validation remembers PostgreSQL accepted (see [`Db::accept`]).
const MAX_ACCEPTED: usize = 4096;

/// How long a pooled connection is waited for, or a new one made.
const WAIT: Duration = Duration::from_secs(5);

/// The connections kept for catalog reads beyond `max_connections`: the size of the server's
/// look-up lane for that many engine slots (a quarter, at least 2).
pub fn lookup_connections(max_connections: usize) -> usize {
    (max_connections.max(1) / 4).max(2)
}

/// How callers become database roles.
#[derive(Clone, Debug)]
pub struct Roles {
    /// The claim of a verified caller naming its role (`pg_role` by default).
    pub claim: String,
    /// The role of callers without that claim; `None`: a verified caller without it is
    /// refused, and an ambient caller (stdio, no claims at all) acts as the login role.
    pub default: Option<String>,
    /// Whether a role that is a superuser or has `BYPASSRLS` may serve callers (never by
    /// default: such a role ignores the grants and row policies the catalog stands for).
    pub allow_superuser: bool,
}

impl Default for Roles {
    fn default() -> Self {
        Roles { claim: DEFAULT_ROLE_CLAIM.to_owned(), default: None, allow_superuser: false }
    }
}

impl Roles {
    /// The role `caller` acts as: its claim, else the default role, else (`Ok(None)`) the
    /// login role for an ambient caller. A verified caller (one with claims) without the
    /// claim and without a default role, or with a claim that is not a role name, is refused.
    pub fn of(&self, caller: &Caller) -> Result<Option<String>, PgError> {
        match caller.claim(&self.claim) {
            Some(Json::String(role)) if !role.is_empty() => Ok(Some(role.clone())),
            Some(_) => Err(PgError::refused(format!(
                "the caller's `{}` claim is not a role name: refused",
                self.claim
            ))),
            None if self.default.is_some() => Ok(self.default.clone()),
            None if caller.claims.is_empty() => Ok(None),
            None => Err(PgError::refused(format!(
                "the caller has no `{}` claim and the server names no default role (--default-role): refused",
                self.claim
            ))),
        }
    }
}

/// A PostgreSQL identifier, double-quoted.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Makes the pool's connections on the engine's runtime, whichever runtime asks for one: the
/// connection's task (which reads and writes its socket) lives there, so a run can take a
/// pooled connection on its own thread without handing the wait to that runtime and back.
struct OnRuntime(tokio::runtime::Handle);

impl deadpool_postgres::Connect for OnRuntime {
    fn connect(
        &self,
        config: &tokio_postgres::Config,
    ) -> futures::future::BoxFuture<
        '_,
        Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>), tokio_postgres::Error>,
    > {
        let (config, handle) = (config.clone(), self.0.clone());
        Box::pin(async move {
            let made = handle.spawn(connect(config.clone(), None));
            match made.await {
                Ok(made) => made,
                // The engine's runtime is shutting down (the Db is being dropped): connect here;
                // the connection's task, spawned on the stopping runtime, ends with it.
                Err(_) => connect(config, Some(handle)).await,
            }
        })
    }
}

/// A new connection and its task, spawned on `on` (else on the current runtime).
async fn connect(
    config: tokio_postgres::Config,
    on: Option<tokio::runtime::Handle>,
) -> Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>), tokio_postgres::Error> {
    let (client, connection) = config.connect(NoTls).await?;
    let task = async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "a database connection failed");
        }
    };
    let task = match on {
        Some(handle) => handle.spawn(task),
        None => tokio::spawn(task),
    };
    Ok((client, task))
}

/// The shared database.
pub struct Db {
    /// The engine's own runtime: the synchronous engine calls (validation, the catalog, the
    /// plain tools) hand their database work to it and wait.
    runtime: Option<tokio::runtime::Runtime>,
    pool: Pool,
    /// The schema programs work in (their `search_path`).
    pub schema: String,
    /// Caller → role.
    pub roles: Roles,
    /// Role (`""`: the login role) → why its last transaction was refused.
    refused: Mutex<HashMap<String, String>>,
    /// Role (`""`: the login role) → the catalog stamp it was read at, and the snapshot.
    catalogs: Mutex<HashMap<String, (String, Arc<CatalogSnapshot>)>>,
    /// (role, catalog stamp, statement) that PostgreSQL prepared without error as that role at
    /// that stamp: validation's answer for them without a transaction.
    accepted: Mutex<HashSet<(String, String, String)>>,
    /// Catalog stamps read so far (each a round trip before its request's work).
    stamps: std::sync::atomic::AtomicU64,
}

impl Drop for Db {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics inside another runtime: let it go instead.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// A database failure as the engine reports it: SQLSTATE, message, position, hint.
#[derive(Clone, Debug, Default)]
pub struct PgError {
    /// The SQLSTATE code (empty when the failure is not PostgreSQL's: the connection).
    pub code: String,
    pub message: String,
    /// 1-based character position in the statement text sent, when PostgreSQL gave one.
    pub position: Option<usize>,
    pub hint: Option<String>,
    pub detail: Option<String>,
}

impl PgError {
    /// A failure outside PostgreSQL (no SQLSTATE).
    pub fn other(message: impl Into<String>) -> Self {
        PgError { message: message.into(), ..PgError::default() }
    }

    /// The caller may not act as a role (SQLSTATE 42501, insufficient privilege).
    pub fn refused(message: impl Into<String>) -> Self {
        PgError { code: "42501".to_owned(), message: message.into(), ..PgError::default() }
    }
}

impl From<tokio_postgres::Error> for PgError {
    fn from(e: tokio_postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) => PgError {
                code: db.code().code().to_owned(),
                message: db.message().to_owned(),
                position: match db.position() {
                    Some(tokio_postgres::error::ErrorPosition::Original(p)) => usize::try_from(*p).ok(),
                    _ => None,
                },
                hint: db.hint().map(str::to_owned),
                detail: db.detail().map(str::to_owned),
            },
            None => PgError::other(e.to_string()),
        }
    }
}

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl Db {
    /// Connect to `url` (checked now: a server that does not answer fails at start), serving
    /// `schema` (which must exist) to callers mapped to roles by `roles`, with
    /// `max_connections` connections for validations and runs and [`lookup_connections`] more
    /// for catalog reads (the server's look-up lane), so that every engine call holding a slot
    /// finds a connection at once.
    pub fn connect(url: &str, schema: &str, roles: Roles, max_connections: usize) -> Result<Db, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("sql-postgres")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the database runtime: {e}"))?;
        let mut config: tokio_postgres::Config =
            url.parse().map_err(|e| format!("not a PostgreSQL URL ({e}): {url}"))?;
        config.connect_timeout(WAIT);
        if config.get_application_name().is_none() {
            config.application_name("pilotage sql/postgres");
        }
        let manager = Manager::from_connect(
            config,
            OnRuntime(runtime.handle().clone()),
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = {
            let _in = runtime.enter();
            Pool::builder(manager)
                .max_size(max_connections.max(1) + lookup_connections(max_connections))
                .runtime(Runtime::Tokio1)
                .wait_timeout(Some(WAIT))
                .create_timeout(Some(WAIT))
                .recycle_timeout(Some(WAIT))
                .build()
                .map_err(|e| e.to_string())?
        };
        let db = Db {
            runtime: Some(runtime),
            pool,
            schema: schema.to_owned(),
            roles,
            refused: Mutex::default(),
            catalogs: Mutex::default(),
            accepted: Mutex::default(),
            stamps: Default::default(),
        };
        let name = schema.to_owned();
        let found = db.block(|c| async move {
            let row = c.query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&name]).await?;
            let su = "SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user";
            let superuser: bool = c.query_one(su, &[]).await?.get(0);
            Ok::<_, PgError>((row.is_some(), superuser))
        });
        match found {
            Ok((true, superuser)) => {
                if superuser && db.roles.default.is_none() && !db.roles.allow_superuser {
                    tracing::warn!(
                        "the login role is a superuser (or BYPASSRLS) and no --default-role is set: callers without a role claim are refused"
                    );
                }
                Ok(db)
            }
            Ok((false, _)) => Err(format!("schema {schema:?} does not exist in the database at {url}")),
            Err(e) => Err(format!("no PostgreSQL answers at {url}: {e}")),
        }
    }

    /// Remember how the last transaction as `role` began (`None`: it did), so a validation
    /// reports a refused role as itself rather than as the empty catalog the refusal leaves.
    pub fn remember_refusal(&self, role: Option<&str>, refusal: Option<&PgError>) {
        let key = role.unwrap_or_default().to_owned();
        let mut refused = self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match refusal {
            Some(e) if e.code == "42501" => {
                if refused.len() >= MAX_REFUSALS && !refused.contains_key(&key) {
                    refused.clear();
                }
                refused.insert(key, e.message.clone());
            }
            _ => {
                refused.remove(&key);
            }
        }
    }

    /// The snapshot of `role` read at `stamp`, if it is the one kept.
    pub fn cached_catalog(&self, role: Option<&str>, stamp: &str) -> Option<Arc<CatalogSnapshot>> {
        self.kept_where(role, |s, _| s == stamp).map(|(_, snap)| snap)
    }

    /// The stamp and snapshot kept for `role`, when `keep` says they are the ones wanted: the one
    /// look-up of the kept catalogs every other is made of.
    fn kept_where(
        &self,
        role: Option<&str>,
        keep: impl FnOnce(&str, &Arc<CatalogSnapshot>) -> bool,
    ) -> Option<(String, Arc<CatalogSnapshot>)> {
        let catalogs = self.catalogs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (stamp, snap) = catalogs.get(role.unwrap_or_default())?;
        keep(stamp, snap).then(|| (stamp.clone(), snap.clone()))
    }

    /// Keep `snapshot`, read as `role` at `stamp`. A stamp that moved (DDL, GRANT, REVOKE,
    /// COMMENT, role membership) also empties every connection's prepared statements.
    pub fn keep_catalog(&self, role: Option<&str>, stamp: String, snapshot: Arc<CatalogSnapshot>) {
        let mut catalogs = self.catalogs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = role.unwrap_or_default().to_owned();
        if catalogs.get(&key).is_some_and(|(s, _)| *s != stamp) {
            self.pool.manager().statement_caches.clear();
        }
        if catalogs.len() >= MAX_REFUSALS && !catalogs.contains_key(&key) {
            catalogs.clear();
        }
        catalogs.insert(key, (stamp, snapshot));
    }

    /// How many catalog stamps were read (each a round trip of its request before its work; a
    /// run whose snapshot was kept reads none: its guard confirms it in its transaction).
    #[allow(dead_code)] // read by the tests, which include this module (postgres_confirm.rs)
    pub fn stamps_read(&self) -> u64 {
        self.stamps.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A catalog stamp is read.
    pub fn reading_stamp(&self) {
        self.stamps.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The snapshot kept for `role` (the one its latest catalog read found), not proven current.
    pub fn kept_catalog(&self, role: Option<&str>) -> Option<Arc<CatalogSnapshot>> {
        self.kept_where(role, |_, _| true).map(|(_, snap)| snap)
    }

    /// The catalog stamp the snapshot of `version` kept for `role` was read at, if it is still
    /// the one kept.
    pub fn stamp_at(&self, role: Option<&str>, version: &str) -> Option<String> {
        self.kept_where(role, |_, kept| kept.version() == version).map(|(stamp, _)| stamp)
    }

    /// The catalog stamp `snapshot` was read at, when it is the snapshot kept for `role` (the one
    /// its latest catalog read found): a request's snapshot, read just before its validation.
    pub fn stamp_of(&self, role: Option<&str>, snapshot: &Arc<CatalogSnapshot>) -> Option<String> {
        self.kept_where(role, |_, kept| Arc::ptr_eq(kept, snapshot)).map(|(stamp, _)| stamp)
    }

    /// Whether PostgreSQL prepared `sql` without error as `role` at catalog `stamp`.
    pub fn accepted(&self, role: Option<&str>, stamp: &str, sql: &str) -> bool {
        let accepted = self.accepted.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        accepted.contains(&(role.unwrap_or_default().to_owned(), stamp.to_owned(), sql.to_owned()))
    }

    /// PostgreSQL prepared `sql` without error as `role` at catalog `stamp` (remembered for at
    /// most [`MAX_ACCEPTED`] statements; the set starts afresh past it).
    pub fn accept(&self, role: Option<&str>, stamp: &str, sql: &str) {
        let mut accepted = self.accepted.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if accepted.len() >= MAX_ACCEPTED {
            accepted.clear();
        }
        accepted.insert((role.unwrap_or_default().to_owned(), stamp.to_owned(), sql.to_owned()));
    }

    /// Why the last transaction as `role` was refused, if it was.
    pub fn refusal(&self, role: Option<&str>) -> Option<PgError> {
        let refused = self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        refused.get(role.unwrap_or_default()).map(|m| PgError::refused(m.clone()))
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("the runtime lives until the drop")
    }

    /// A pooled connection, taken on the asking runtime without a hand-off (new connections
    /// are made and run on the engine's runtime, [`OnRuntime`]).
    pub async fn client(&self) -> Result<deadpool_postgres::Object, PgError> {
        self.pool.get().await.map_err(|e| PgError::other(format!("no database connection: {e}")))
    }

    /// Run `work` with a pooled connection on the engine's runtime and wait for it: the
    /// synchronous engine calls' way to the database. The wait for the connection is reported to
    /// the engine call ([`Signal::waited`]: the request's `queued_ms`, as a catalog read's or a
    /// plain tool's), not counted as the work's time.
    pub fn block<T, F, Fut>(&self, work: F) -> Result<T, PgError>
    where
        T: Send + 'static,
        F: FnOnce(deadpool_postgres::Object) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, PgError>> + Send + 'static,
    {
        let (out, waited) = self.block_waiting(work);
        Signal::current().waited(waited);
        out
    }

    /// [`Db::block`], with how long it waited for the pooled connection, which the caller
    /// reports (a validation with `Validation::waited`).
    pub fn block_waiting<T, F, Fut>(&self, work: F) -> (Result<T, PgError>, Duration)
    where
        T: Send + 'static,
        F: FnOnce(deadpool_postgres::Object) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, PgError>> + Send + 'static,
    {
        let pool = self.pool.clone();
        let task = self.runtime().spawn(async move {
            let asked = std::time::Instant::now();
            let client = pool.get().await;
            let waited = asked.elapsed();
            let out = match client {
                Ok(client) => work(client).await,
                Err(e) => Err(PgError::other(format!("no database connection: {e}"))),
            };
            (out, waited)
        });
        futures::executor::block_on(task)
            .unwrap_or_else(|e| (Err(PgError::other(e.to_string())), Duration::ZERO))
    }

    /// Terminate backend `pid` (one of this server's own connections, whose statement did not
    /// stop when cancelled): the login role may signal its own backends.
    pub async fn terminate(&self, pid: i32) {
        if let Ok(client) = self.client().await {
            if let Err(e) = client.execute("SELECT pg_terminate_backend($1)", &[&pid]).await {
                tracing::warn!(pid, error = %e, "a cancelled statement's backend could not be terminated");
            }
        }
    }

    /// Spawn `work` on the engine's runtime (cancelling a query must not wait on the caller).
    pub fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        self.runtime().spawn(work);
    }
}
