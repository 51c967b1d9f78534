//! `sql/sqlite-3`: SQL text over a real SQLite database (rusqlite, bundled SQLite).
//!
//! One [`Sql`] is one MCP session's database: a private in-memory copy of the source database,
//! made with SQLite's backup API when the session's engine is created, so sessions never see
//! each other's writes and the source file is never written by a program. The files:
//!
//! - `text.rs`: the program text: tokens, 1-based text ranges, statements split at `;`,
//!   `:name` placeholders;
//! - `check.rs`: validation (forbidden statements, syntax, names against the caller's catalog
//!   snapshot, literal types, SQLite's own `prepare` as the final check) and the plan;
//! - `run.rs`: execution inside one transaction, recording one trace step per statement and
//!   per table reference;
//! - `db.rs`: the connection, its authorizer, the demo schema, schema introspection, the
//!   catalog entries and the fingerprint;
//! - `admin.rs`: the plain tools harnesses use to observe and change the database;
//! - `../../common/`: what the example engines share (here: the snapshot cache, the
//!   fingerprint digest, the test harness).
//!
//! The integration tests (`tests/it/main.rs`) include this module by path as `crate::sql`. Its
//! unit tests (`tests.rs`) are declared by `../main.rs`, so they run once, in this example's
//! test target, and not again in every crate that includes the engine.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use pilotage::prelude::*;

mod admin;
mod check;
pub(crate) mod db;
#[path = "../../common/digest.rs"]
mod digest;
pub(crate) mod kept;
#[path = "../../common/placeholders.rs"]
mod placeholders;
#[path = "../../common/recent.rs"]
mod recent;
mod run;
#[allow(dead_code)] // `change`: a schema change drops the snapshot even when it fails
#[path = "../../common/snapshot_cache.rs"]
mod snapshot_cache;
mod text;

use snapshot_cache::SnapshotCache;

/// The database file a server's sessions copy: `db`, else [`default_database`]. It is created
/// with the demo schema and rows when it does not exist, and opened once now, so that a file
/// that is not a usable database fails at start, not at the first session.
pub fn source_database(db: Option<PathBuf>) -> Result<PathBuf, String> {
    let path = db.unwrap_or_else(default_database);
    if db::seed_file(&path)? {
        tracing::info!(path = %path.display(), "created the demo database");
    }
    Sql::copy_of(&path)?;
    Ok(path)
}

/// The default database file: `$XDG_DATA_HOME/pilotage-sql-demo/demo.sqlite`, else
/// `<repository>/target/pilotage-sql-demo/demo.sqlite`.
pub fn default_database() -> PathBuf {
    let base = match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"),
    };
    base.join("pilotage-sql-demo").join("demo.sqlite")
}

/// The closed diagnostic-code set (the reserved `constraint`, `input_binding` and
/// `context_binding` are added by the derive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::Codes)]
pub enum SqlCode {
    MalformedProgram,
    SyntaxError,
    ForbiddenStatement,
    BadPlaceholder,
    UnknownTable,
    UnknownColumn,
    AmbiguousColumn,
    NotWritable,
    TypeMismatch,
}

/// Risk levels, least risky first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, pilotage::RiskLevels)]
pub enum SqlRisk {
    #[risk(read_only)]
    Safe,
    #[risk(write)]
    Write,
    #[risk(destructive)]
    Destructive,
}

/// Engine-defined failure statuses (step level; see the closed-sets guide).
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::Statuses)]
pub enum SqlStatus {
    #[status(side_effects = false)]
    ConstraintViolated,
    #[status(side_effects = false)]
    Timeout,
}

/// Catalog entry kinds: both are "called" by the statements that name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::EntryKinds)]
pub enum SqlKind {
    #[kind(callable)]
    Table,
    #[kind(callable)]
    View,
}

/// The bounds this Language is served with: the defaults, and a revalidation cache. A verdict
/// depends only on the program, the caller and this session's schema, whose every change moves
/// `catalog_version` (indexes aside, which change no verdict), so a program validated moments
/// before, or already run, against the same version is admitted by a look-up; the run prepares
/// its statements in SQLite anyway.
pub fn limits() -> pilotage::engine::Limits {
    pilotage::engine::Limits { revalidation_cache: 256, ..pilotage::engine::Limits::default() }
}

/// The engine: one session's private database and its cached catalog snapshot.
pub struct Sql {
    db: Mutex<db::Db>,
    snapshot: SnapshotCache,
}

impl Default for Sql {
    fn default() -> Self {
        Self::demo()
    }
}

impl Sql {
    /// A private in-memory database seeded with the demo schema and rows.
    pub fn demo() -> Self {
        Self::with(db::Db::demo())
    }

    /// A private in-memory copy of the database file at `path` (SQLite backup API); the file
    /// is opened read-only and never written.
    pub fn copy_of(path: &Path) -> Result<Self, String> {
        db::Db::copy_of(path).map(Self::with)
    }

    /// A factory for `ServerBuilder::language`: every call (every MCP session) copies
    /// `source` afresh, or seeds the demo in memory when `source` is `None`. A copy that fails
    /// (the file vanished) is logged and replaced by the seeded demo.
    pub fn factory(source: Option<PathBuf>) -> impl Fn() -> Sql + Send + Sync + 'static {
        move || {
            match &source {
            None => Sql::demo(),
            Some(path) => Sql::copy_of(path).unwrap_or_else(|e| {
                tracing::error!(path = %path.display(), error = %e, "cannot copy the database; serving the demo");
                Sql::demo()
            }),
        }
        }
    }

    fn with(db: db::Db) -> Self {
        Sql { db: Mutex::new(db), snapshot: SnapshotCache::default() }
    }

    pub(crate) fn db(&self) -> MutexGuard<'_, db::Db> {
        self.db.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drop the cached snapshot after a schema change (the database lock is released first:
    /// `catalog_snapshot` takes the cache lock, then the database lock).
    fn schema_changed(&self) {
        self.snapshot.clear();
    }

    /// The current catalog version (the same for every caller of the session).
    pub(crate) fn version(&self) -> String {
        self.catalog_snapshot(&Caller::new("admin")).version().to_owned()
    }

    /// Apply the admin change `f`, then drop the cached snapshot (whatever the outcome) and add
    /// the new `catalog_version` to the result.
    fn change_schema(&self, f: impl FnOnce(&mut db::Db) -> Result<Json, String>) -> Result<Json, String> {
        let result = f(&mut self.db());
        self.schema_changed();
        result.map(|mut v| {
            v["catalog_version"] = json!(self.version());
            v
        })
    }
}

#[pilotage::language(
    name = "sql/sqlite-3",
    title = "SQL over SQLite 3",
    program = "query",
    locator = "text-range",
    capabilities(guides, catalog(search), validate, plan, execute, trace_fetch),
    execution = "immediate",
    trace = "full",
    retention = "session",
    trace_tool = "trace_sql",
    guides = "examples/sql/guides",
    codes = SqlCode,
    risk = SqlRisk,
    statuses = SqlStatus,
    kinds = SqlKind,
    catalog = catalog_snapshot,
)]
impl Sql {
    /// A program is SQL text (a JSON string): statements separated by `;`, named `stmt-1`,
    /// `stmt-2`, ... Read the `sql-core` guide first. Diagnostics carry 1-based text ranges.
    #[loop_tool(validate, name = "validate_sql")]
    fn validate(&self, program: &Json, v: &mut Validation<SqlCode, SqlRisk>) {
        check::validate(&self.db, program, v);
    }

    /// Runs every statement in one transaction on this session's private database; a failing
    /// statement rolls the whole transaction back. `input` binds the `:name` placeholders
    /// exactly (every name used, nothing else).
    #[loop_tool(execute, name = "run_sql")]
    async fn run(&self, program: &Json, run: &mut Run<SqlStatus>) -> Finish<SqlStatus> {
        let (finish, dropped) = run::execute(&self.db, program, run);
        if dropped {
            self.schema_changed();
        }
        finish
    }

    /// Every session caller sees the same entries (the user tables and views; SQLite's own
    /// `sqlite_*` tables are invisible), so one cached snapshot serves them all.
    pub(crate) fn catalog_snapshot(&self, _caller: &Caller) -> Arc<CatalogSnapshot> {
        self.snapshot.get_or_build(|| CatalogSnapshot::new(self.db().entries()))
    }

    #[plain_tool(
        name = "sql_world_fingerprint",
        description = "Test harness tool (not part of Pilotage): a digest of this session's database (schema and every row) with the row count of each table. Equal fingerprints mean an unchanged database.",
        read_only
    )]
    pub(crate) fn fingerprint(&self, _args: admin::NoArgs) -> Result<Json, String> {
        self.db().fingerprint()
    }

    #[plain_tool(
        name = "sql_schema_apply",
        description = "Admin tool (not part of Pilotage): apply DDL to this session's database: `ddl` holds CREATE TABLE, CREATE VIEW, CREATE INDEX, ALTER TABLE or DROP TABLE/VIEW/INDEX statements separated by `;`, applied in one transaction (all or nothing). Triggers and virtual tables are refused. Moves catalog_version when tables, views or their columns change; row changes never do."
    )]
    pub(crate) fn schema_apply(&self, args: admin::SchemaApply) -> Result<Json, String> {
        self.change_schema(|db| admin::schema_apply(db, args))
    }

    #[plain_tool(
        name = "sql_create_table",
        description = "Admin tool (not part of Pilotage), the catalog_add_entry of this Language: create a STRICT table `name` whose `columns` map each column name to its declaration (e.g. {\"id\": \"INTEGER PRIMARY KEY\", \"body\": \"TEXT NOT NULL\"}). Adds a `table` catalog entry and moves catalog_version."
    )]
    pub(crate) fn create_table(&self, args: admin::CreateTable) -> Result<Json, String> {
        self.change_schema(|db| admin::create_table(db, args))
    }

    #[plain_tool(
        name = "sql_drop_table",
        description = "Admin tool (not part of Pilotage), the catalog_remove_entry of this Language: drop the table or view `name` from this session's database. Removes its catalog entry and moves catalog_version."
    )]
    pub(crate) fn drop_table(&self, args: admin::DropTable) -> Result<Json, String> {
        self.change_schema(|db| admin::drop_table(db, args))
    }
}
