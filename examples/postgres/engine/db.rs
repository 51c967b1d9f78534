//! The shared database: one connection pool for every session and the engine's own small
//! runtime, the caller → role mapping, the transaction every validation and run opens (as the
//! caller's role, on the served schema, under a statement timeout), schema introspection as
//! the role (its catalog) and the fingerprint harnesses compare.

use std::future::Future;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use pilotage::prelude::*;
use tokio_postgres::{Client, GenericClient, NoTls, Transaction};

use super::digest::fingerprint;
use super::{PgKind, PgRisk};

/// The claim of a verified caller that names its database role, unless configured otherwise.
pub const DEFAULT_ROLE_CLAIM: &str = "pg_role";

/// How long a pooled connection is waited for, or a new one made.
const WAIT: Duration = Duration::from_secs(5);

/// How callers become database roles.
#[derive(Clone, Debug)]
pub struct Roles {
    /// The claim of a verified caller naming its role (`pg_role` by default).
    pub claim: String,
    /// The role of callers without that claim (ambient stdio callers, anonymous sessions);
    /// `None`: the connection's own login role.
    pub default: Option<String>,
}

impl Default for Roles {
    fn default() -> Self {
        Roles { claim: DEFAULT_ROLE_CLAIM.to_owned(), default: None }
    }
}

impl Roles {
    /// The role `caller` acts as: its claim, else the default role (`None`: the login role).
    pub fn of(&self, caller: &Caller) -> Option<String> {
        match caller.claim(&self.claim).and_then(Json::as_str) {
            Some(role) => Some(role.to_owned()),
            None => self.default.clone(),
        }
    }
}

/// A PostgreSQL identifier, double-quoted.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
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

/// One column of a table or view.
#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    /// `format_type` of the column (`integer`, `character varying(80)`, ...).
    pub ty: String,
    pub not_null: bool,
    pub has_default: bool,
}

/// What the role may do with a relation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Privileges {
    pub select: bool,
    pub insert: bool,
    pub update: bool,
    pub delete: bool,
}

/// One table or view the role holds some privilege on.
#[derive(Clone, Debug)]
pub struct Relation {
    pub name: String,
    pub view: bool,
    /// Views: whether PostgreSQL can write through it.
    pub updatable: bool,
    pub privileges: Privileges,
    pub columns: Vec<Column>,
    /// `COMMENT ON` text, part of the entry's description.
    pub comment: Option<String>,
}

/// One function the role may execute.
#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    /// `name(argument types)`: the entry id (functions overload).
    pub id: String,
    pub arguments: String,
    pub result: String,
    /// Volatile functions may change data.
    pub volatile: bool,
}

/// What the role sees of the schema.
#[derive(Clone, Debug, Default)]
pub struct Schema {
    pub relations: Vec<Relation>,
    pub functions: Vec<Function>,
}

impl Db {
    /// Connect to `url` (checked now: a server that does not answer fails at start), serving
    /// `schema` (which must exist) to callers mapped to roles by `roles`.
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
        config.application_name("pilotage sql/postgres");
        let manager =
            Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = {
            let _in = runtime.enter();
            Pool::builder(manager)
                .max_size(max_connections.max(2))
                .runtime(Runtime::Tokio1)
                .wait_timeout(Some(WAIT))
                .create_timeout(Some(WAIT))
                .recycle_timeout(Some(WAIT))
                .build()
                .map_err(|e| e.to_string())?
        };
        let db = Db { runtime: Some(runtime), pool, schema: schema.to_owned(), roles };
        let name = schema.to_owned();
        let found = db.block(|c| async move {
            let row = c.query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&name]).await?;
            let su = "SELECT rolsuper FROM pg_roles WHERE rolname = current_user";
            let superuser: bool = c.query_one(su, &[]).await?.get(0);
            Ok::<_, PgError>((row.is_some(), superuser))
        });
        match found {
            Ok((true, superuser)) => {
                if superuser && db.roles.default.is_none() {
                    tracing::warn!(
                        "the login role is a superuser and no --default-role is set: callers without a role claim act as a superuser"
                    );
                }
                Ok(db)
            }
            Ok((false, _)) => Err(format!("schema {schema:?} does not exist in the database at {url}")),
            Err(e) => Err(format!("no PostgreSQL answers at {url}: {e}")),
        }
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("the runtime lives until the drop")
    }

    /// A pooled connection; new connections run on the engine's runtime, whichever runtime
    /// asks.
    pub async fn client(&self) -> Result<deadpool_postgres::Object, PgError> {
        let pool = self.pool.clone();
        match self.runtime().spawn(async move { pool.get().await }).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => Err(PgError::other(format!("no database connection: {e}"))),
            Err(e) => Err(PgError::other(format!("no database connection: {e}"))),
        }
    }

    /// Run `work` with a pooled connection on the engine's runtime and wait for it: the
    /// synchronous engine calls' way to the database.
    pub fn block<T, F, Fut>(&self, work: F) -> Result<T, PgError>
    where
        T: Send + 'static,
        F: FnOnce(deadpool_postgres::Object) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, PgError>> + Send + 'static,
    {
        let pool = self.pool.clone();
        let task = self.runtime().spawn(async move {
            let client =
                pool.get().await.map_err(|e| PgError::other(format!("no database connection: {e}")))?;
            work(client).await
        });
        futures::executor::block_on(task).unwrap_or_else(|e| Err(PgError::other(e.to_string())))
    }

    /// Spawn `work` on the engine's runtime (cancelling a query must not wait on the caller).
    pub fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        self.runtime().spawn(work);
    }

    /// The statements that make a new transaction act as `role` on the served schema, under
    /// a statement timeout of `timeout`.
    pub fn session_sql(&self, role: Option<&str>, timeout: Duration) -> String {
        let mut sql = String::new();
        if let Some(role) = role {
            sql.push_str(&format!("SET LOCAL ROLE {}; ", ident(role)));
        }
        sql.push_str(&format!(
            "SET LOCAL search_path = {}; SET LOCAL statement_timeout = {}; SET LOCAL lock_timeout = {};",
            ident(&self.schema),
            timeout.as_millis().max(1),
            timeout.as_millis().clamp(1, 2000),
        ));
        sql
    }
}

/// Make the new transaction `tx` act as the caller (`session`, from [`Db::session_sql`]); a
/// role the login may not assume, or a superuser role reached through a caller's claim, is
/// refused.
pub async fn begin(tx: &Transaction<'_>, session: &str, role: Option<&str>) -> Result<(), PgError> {
    if let Err(e) = tx.batch_execute(session).await {
        let mut e = PgError::from(e);
        if let Some(role) = role {
            e.message = format!("the caller's database role {role:?} cannot be assumed: {}", e.message);
            e.code = "42501".to_owned();
        }
        return Err(e);
    }
    if let Some(role) = role {
        let superuser = tx.query_one("SELECT rolsuper FROM pg_roles WHERE rolname = current_user", &[]).await;
        if !matches!(superuser.map(|r| r.get::<_, bool>(0)), Ok(false)) {
            return Err(PgError {
                code: "42501".to_owned(),
                message: format!("the caller's database role {role:?} is a superuser: refused"),
                ..PgError::default()
            });
        }
    }
    Ok(())
}

/// What the current role sees of `schema`: the tables and views it holds any privilege on
/// (with their columns) and the functions it may execute.
pub async fn introspect(client: &impl GenericClient, schema: &str) -> Result<Schema, PgError> {
    let rows = client
        .query(
            "SELECT c.relname, c.relkind IN ('v', 'm'), pg_relation_is_updatable(c.oid, false) > 0, \
                    has_table_privilege(c.oid, 'SELECT'), has_table_privilege(c.oid, 'INSERT'), \
                    has_table_privilege(c.oid, 'UPDATE'), has_table_privilege(c.oid, 'DELETE'), \
                    obj_description(c.oid, 'pg_class') \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') \
               AND has_table_privilege(c.oid, 'SELECT, INSERT, UPDATE, DELETE') \
             ORDER BY c.relname",
            &[&schema],
        )
        .await?;
    let mut relations: Vec<Relation> = rows
        .iter()
        .map(|r| Relation {
            name: r.get(0),
            view: r.get(1),
            updatable: r.get(2),
            privileges: Privileges { select: r.get(3), insert: r.get(4), update: r.get(5), delete: r.get(6) },
            columns: Vec::new(),
            comment: r.get(7),
        })
        .collect();
    let columns = client
        .query(
            "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, \
                    a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '' \
             FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid \
                  JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND a.attnum > 0 AND NOT a.attisdropped \
               AND c.relkind IN ('r', 'p', 'v', 'm', 'f') \
             ORDER BY c.relname, a.attnum",
            &[&schema],
        )
        .await?;
    for r in &columns {
        let table: String = r.get(0);
        if let Some(rel) = relations.iter_mut().find(|t| t.name == table) {
            rel.columns.push(Column {
                name: r.get(1),
                ty: r.get(2),
                not_null: r.get(3),
                has_default: r.get(4),
            });
        }
    }
    let functions = client
        .query(
            "SELECT p.proname, pg_get_function_identity_arguments(p.oid), pg_get_function_arguments(p.oid), \
                    pg_get_function_result(p.oid), p.provolatile = 'v' \
             FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
             WHERE n.nspname = $1 AND p.prokind = 'f' AND has_function_privilege(p.oid, 'EXECUTE') \
             ORDER BY p.proname, 2",
            &[&schema],
        )
        .await?
        .iter()
        .map(|r| {
            let name: String = r.get(0);
            let identity: String = r.get(1);
            Function {
                id: format!("{name}({identity})"),
                name,
                arguments: r.get(2),
                result: r.get::<_, Option<String>>(3).unwrap_or_default(),
                volatile: r.get(4),
            }
        })
        .collect();
    relations.retain(|r| !r.name.is_empty());
    Ok(Schema { relations, functions })
}

/// The JSON type of a PostgreSQL column type, as far as the engine's values go.
fn json_type(ty: &str) -> Option<&'static str> {
    let base = ty.split('(').next().unwrap_or(ty).trim();
    Some(match base {
        _ if base.ends_with("[]") => "array",
        "smallint" | "integer" | "bigint" => "integer",
        "real" | "double precision" => "number",
        "boolean" => "boolean",
        "json" | "jsonb" => return None,
        _ => "string",
    })
}

impl Relation {
    fn row_schema(&self, for_insert: bool) -> Json {
        let mut properties = serde_json::Map::new();
        let mut required = Vec::new();
        for c in &self.columns {
            let mut p = serde_json::Map::new();
            if let Some(t) = json_type(&c.ty) {
                p.insert("type".into(), if c.not_null { json!(t) } else { json!([t, "null"]) });
            }
            let about = if c.not_null { format!("{} NOT NULL", c.ty) } else { c.ty.clone() };
            p.insert("description".into(), json!(about));
            properties.insert(c.name.clone(), Json::Object(p));
            if !for_insert || (c.not_null && !c.has_default) {
                required.push(c.name.clone());
            }
        }
        json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
    }

    /// What the role may do, as words (`SELECT, INSERT`).
    pub fn granted(&self) -> Vec<&'static str> {
        let p = self.privileges;
        [(p.select, "SELECT"), (p.insert, "INSERT"), (p.update, "UPDATE"), (p.delete, "DELETE")]
            .into_iter()
            .filter_map(|(held, word)| held.then_some(word))
            .collect()
    }

    /// The catalog entry, from the schema and the role's privileges only (rows never move
    /// `catalog_version`; a GRANT or REVOKE does, for that role).
    pub fn entry(&self) -> CatalogEntry {
        let names: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
        let granted = self.granted();
        let p = self.privileges;
        let writable = !self.view || self.updatable;
        let risk = if p.delete && writable {
            PgRisk::Destructive
        } else if (p.insert || p.update) && writable {
            PgRisk::Write
        } else {
            PgRisk::Safe
        };
        let (kind, what) = if self.view { (PgKind::View, "View") } else { (PgKind::Table, "Table") };
        let comment = self.comment.as_deref().map(|c| format!(" {c}")).unwrap_or_default();
        let mut e = CatalogEntry::new(self.name.clone(), kind, self.name.clone(), risk)
            .description(format!(
                "{what} with columns {}. Your role may {} it{}. input_schema is a row you can INSERT, output_schema a row you SELECT.{comment}",
                names.join(", "),
                granted.join(", "),
                if self.view && !self.updatable { " (PostgreSQL cannot write through this view)" } else { "" },
            ))
            .input_schema(self.row_schema(true))
            .output_schema(self.row_schema(false))
            .tag(if self.view { "view" } else { "table" });
        if self.view && self.updatable {
            e = e.tag("updatable");
        }
        for g in granted {
            e = e.tag(g.to_lowercase());
        }
        e
    }
}

impl Function {
    /// The catalog entry.
    pub fn entry(&self) -> CatalogEntry {
        let risk = if self.volatile { PgRisk::Write } else { PgRisk::Safe };
        CatalogEntry::new(self.id.clone(), PgKind::Function, self.name.clone(), risk)
            .description(format!(
                "Function {}({}) returning {}{}.",
                self.name,
                self.arguments,
                self.result,
                if self.volatile { "; volatile: it may change data, so calls plan as write" } else { "" }
            ))
            .input_schema(json!({"type": "object"}))
            .tag("function")
    }
}

impl Schema {
    /// The catalog entries.
    pub fn entries(&self) -> Vec<CatalogEntry> {
        self.relations.iter().map(Relation::entry).chain(self.functions.iter().map(Function::entry)).collect()
    }
}

/// A digest of the served schema (its definition, as the login role sees it) and every row of
/// its tables, with each table's row count: the harnesses' observation of the world.
pub async fn world_fingerprint(client: &Client, schema: &str) -> Result<Json, PgError> {
    let s = introspect(client, schema).await?;
    let mut canonical = format!(
        "{:?}",
        s.relations
            .iter()
            .map(|r| (&r.name, r.view, r.columns.iter().map(|c| (&c.name, &c.ty)).collect::<Vec<_>>()))
            .collect::<Vec<_>>()
    );
    let mut counts = serde_json::Map::new();
    for t in s.relations.iter().filter(|r| !r.view) {
        let sql = format!(
            "SELECT coalesce(string_agg(x, E'\\n' ORDER BY x), '') , count(*) FROM (SELECT row_to_json(t)::text AS x FROM {}.{} t) q",
            ident(schema),
            ident(&t.name)
        );
        let row = client.query_one(&sql, &[]).await?;
        let rows: String = row.get(0);
        let n: i64 = row.get(1);
        canonical.push_str(&format!("\n{}:\n{rows}", t.name));
        counts.insert(t.name.clone(), json!(n));
    }
    Ok(json!({"fingerprint": fingerprint(canonical.as_bytes()), "rows": counts}))
}

/// Run `sql` (statements separated by `;`) as the login role on the served schema, in one
/// transaction: the admin tools' way to change the schema.
pub async fn admin_batch(client: &Client, schema: &str, sql: &str) -> Result<(), PgError> {
    client.batch_execute(&format!("BEGIN; SET LOCAL search_path = {};", ident(schema))).await?;
    match client.batch_execute(sql).await {
        Ok(()) => Ok(client.batch_execute("COMMIT").await?),
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Err(e.into())
        }
    }
}
