//! `sql/postgres`: SQL text over one real PostgreSQL database that every session and every
//! replica shares (tokio-postgres behind a deadpool pool).
//!
//! Authorization is the database's: each caller acts as a database role (a verified caller's
//! `pg_role` claim, else the configured default role; only an ambient caller acts as the login
//! role, and superuser or BYPASSRLS roles only with `--allow-superuser`), set with
//! `SET LOCAL ROLE` in every validation, run and catalog transaction, so the caller's catalog,
//! diagnostics and effects are exactly what PostgreSQL's grants allow that role. The files:
//!
//! - `../../sql/engine/text.rs`: the program text (shared with `sql/sqlite-3`): tokens, text
//!   ranges, statements split at `;`, `:name` placeholders;
//! - `check/`: validation (`rules.rs`: forbidden statements and functions; `shape.rs`: the
//!   parse and what a statement reaches; `mod.rs`: relations against the caller's catalog and
//!   the plan; `ask.rs`: PostgreSQL's own prepare and estimates in a transaction that is always
//!   rolled back);
//! - `run.rs`: execution in one transaction, with server-side cancellation;
//! - `session.rs`: one transaction as the caller, and what its drop stops on the server;
//! - `db.rs`: the pool, the caller → role mapping, the roles refused and catalogs kept;
//! - `catalog.rs`: what a role sees (introspection, its stamp), the catalog entries and their
//!   risk, the fingerprint;
//! - `served.rs`: the engine with or without the harness tools;
//! - `values.rs`: values between JSON and PostgreSQL.
//!
//! The integration tests (`tests/it/main.rs`, feature `postgres`) include this module by path
//! as `crate::postgres`.

use std::sync::Arc;

use pilotage::prelude::*;

pub mod catalog;
pub(crate) mod check;
pub mod db;
#[path = "../../common/digest.rs"]
mod digest;
#[path = "../../common/placeholders.rs"]
mod placeholders;
pub(crate) mod run;
mod served;
pub mod session;
#[allow(dead_code)] // `first`, `last`, `parameter_names`: what sql/sqlite-3 uses
#[path = "../../sql/engine/text.rs"]
mod text;
pub(crate) mod values;

pub use db::{Db, Roles};
use session::Session;

/// The closed diagnostic-code set (the reserved `constraint`, `input_binding` and
/// `context_binding` are added by the derive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::Codes)]
pub enum PgCode {
    MalformedProgram,
    SyntaxError,
    ForbiddenStatement,
    BadPlaceholder,
    UnknownTable,
    UnknownColumn,
    AmbiguousColumn,
    UnknownFunction,
    NotWritable,
    TypeMismatch,
    PermissionDenied,
    AlreadyExists,
    /// Warning: an `UPDATE` or `DELETE` without `WHERE`.
    EveryRow,
    /// PostgreSQL could not be reached to check the program.
    Unavailable,
}

/// Risk levels, least risky first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, pilotage::RiskLevels)]
pub enum PgRisk {
    #[default]
    #[risk(read_only)]
    Safe,
    #[risk(write)]
    Write,
    /// Calls a function in an untrusted language: it can reach outside the database.
    #[risk(write, open_world)]
    External,
    #[risk(destructive)]
    Destructive,
    /// Destructive, and reaching outside the database.
    #[risk(destructive, open_world)]
    DestructiveExternal,
}

impl PgRisk {
    /// The level whose wire name is `wire`; an unknown name is `write` (fail closed).
    pub fn from_wire(wire: &str) -> PgRisk {
        use pilotage::model::closed_sets::RiskLevel;
        [PgRisk::Safe, PgRisk::Write, PgRisk::External, PgRisk::Destructive, PgRisk::DestructiveExternal]
            .into_iter()
            .find(|r| r.wire() == wire)
            .unwrap_or(PgRisk::Write)
    }

    /// The least level covering both `self` and `other` (destructive and reaching outside
    /// when either is).
    pub fn join(self, other: PgRisk) -> PgRisk {
        let open = |r: PgRisk| matches!(r, PgRisk::External | PgRisk::DestructiveExternal);
        match self.max(other) {
            PgRisk::Destructive if open(self) || open(other) => PgRisk::DestructiveExternal,
            max => max,
        }
    }
}

/// Engine-defined failure statuses (step level): the transaction is rolled back in each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::Statuses)]
pub enum PgStatus {
    #[status(side_effects = false)]
    ConstraintViolated,
    #[status(side_effects = false)]
    Timeout,
    #[status(side_effects = false)]
    PermissionDenied,
}

/// Catalog entry kinds: all are "called" by the statements that name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::EntryKinds)]
pub enum PgKind {
    #[kind(callable)]
    Table,
    #[kind(callable)]
    View,
    #[kind(callable)]
    Function,
}

/// The engine of one MCP session: the shared database.
pub struct Pg {
    db: Arc<Db>,
}

impl Pg {
    /// A factory for `ServerBuilder::engine`: every session shares `db`. `admin_tools` serves
    /// the harness tools, which act as the login role (`pg_world_fingerprint` reads every
    /// table, `pg_schema_apply` runs DDL): for harnesses, never for agents; without it they
    /// are absent from `tools/list`.
    pub fn factory(
        db: Arc<Db>,
        admin_tools: bool,
    ) -> impl Fn() -> Arc<dyn pilotage::engine::Engine> + Send + Sync + 'static {
        served::factory(db, admin_tools)
    }
}

#[pilotage::language(
    name = "sql/postgres",
    title = "SQL over PostgreSQL",
    program = "query",
    locator = "text-range",
    capabilities(guides, catalog(search, changed_since), validate, plan, execute, trace_fetch),
    execution = "immediate",
    trace = "full",
    retention = "session",
    guides = "examples/postgres/guides",
    codes = PgCode,
    risk = PgRisk,
    statuses = PgStatus,
    kinds = PgKind,
    catalog = catalog_snapshot,
)]
impl Pg {
    /// A program is PostgreSQL SQL text (a JSON string): statements separated by `;`, named
    /// `stmt-1`, `stmt-2`, ... Read the `sql-pg-core` guide first. PostgreSQL itself checks
    /// every statement, as your database role, without running it; diagnostics carry 1-based
    /// text ranges.
    #[loop_tool(validate, name = "validate_sql")]
    fn validate(&self, program: &Json, v: &mut Validation<PgCode, PgRisk>) {
        check::validate(&self.db, program, v);
    }

    /// Runs every statement in one transaction as your database role; a failing statement
    /// rolls the whole transaction back. `input` binds the `:name` placeholders exactly (every
    /// name used, nothing else).
    #[loop_tool(execute, name = "run_sql")]
    async fn run(&self, program: &Json, run: &mut Run<PgStatus>) -> Finish<PgStatus> {
        run::execute(&self.db, program, run).await
    }

    /// Runs of this session are kept for the session.
    #[loop_tool(trace, name = "trace_sql")]
    fn trace(&self) {}

    /// The tables, views and functions of the served schema that the caller's role holds a
    /// privilege on, read live (as that role) on every call: `catalog_version` is a digest of
    /// what the role sees, so DDL, GRANT and REVOKE move it, rows never do.
    pub(crate) fn catalog_snapshot(&self, caller: &Caller) -> Arc<CatalogSnapshot> {
        let role = match self.db.roles.of(caller) {
            Ok(role) => role,
            Err(e) => {
                // Validation and runs tell the caller why; the catalog has no error channel.
                tracing::warn!(caller = %caller.id, error = %e, "no catalog for the caller");
                return Arc::new(CatalogSnapshot::new(Vec::new()));
            }
        };
        // For a run, the kept snapshot serves without its stamp's round trip: the run confirms
        // the stamp in its own transaction (`catalog::guard_sql`).
        if let Some(kept) = self.db.kept_catalog(role.as_deref()) {
            if pilotage::engine::confirm::defer_to_run() {
                return kept;
            }
        }
        let (db, schema, who) = (self.db.clone(), self.db.schema.clone(), role.clone());
        let seen = self.db.block(move |client| async move {
            db.reading_stamp();
            let stamp = catalog::stamp(&client, &schema, who.as_deref()).await?;
            if let Some(kept) = db.cached_catalog(who.as_deref(), &stamp) {
                return Ok((stamp, Some(kept), None));
            }
            let mut session = Session::new(db, client);
            let tx = session.begin(who.as_deref(), check::VALIDATE_TIMEOUT).await?;
            let seen = catalog::introspect(&*tx, &schema).await;
            // Dropped, the transaction queues its ROLLBACK ahead of the connection's next use.
            drop(tx);
            session.ended();
            Ok((stamp, None, Some(seen?)))
        });
        match seen {
            Ok((_, Some(kept), _)) => kept,
            Ok((stamp, None, schema)) => {
                let snapshot =
                    Arc::new(CatalogSnapshot::new(schema.map(|s| s.entries()).unwrap_or_default()));
                self.db.keep_catalog(role.as_deref(), stamp, snapshot.clone());
                snapshot
            }
            Err(e) => {
                tracing::warn!(caller = %caller.id, error = %e, "no catalog for the caller");
                Arc::new(CatalogSnapshot::new(Vec::new()))
            }
        }
    }

    #[plain_tool(
        name = "pg_world_fingerprint",
        description = "Test harness tool (not part of Pilotage; listed only when the server runs with --admin-tools): a digest of the served schema (definition and every row, read as the login role) with the row count of each table. Equal fingerprints mean an unchanged database.",
        read_only,
        input_schema = r#"{"type": "object", "properties": {}, "additionalProperties": false}"#
    )]
    pub(crate) fn fingerprint(&self, _args: &Json) -> Result<Json, String> {
        let schema = self.db.schema.clone();
        self.db
            .block(move |client| async move { catalog::world_fingerprint(&client, &schema).await })
            .map_err(|e| e.message)
    }

    #[plain_tool(
        name = "pg_schema_apply",
        description = "Admin tool (not part of Pilotage; listed only when the server runs with --admin-tools): apply `ddl` (statements separated by `;`) to the served schema as the server's login role, in one transaction. Moves catalog_version when what a role sees changes.",
        input_schema = r#"{"type": "object", "properties": {"ddl": {"type": "string"}}, "required": ["ddl"], "additionalProperties": false}"#
    )]
    pub(crate) fn schema_apply(&self, args: &Json) -> Result<Json, String> {
        let ddl = args["ddl"].as_str().ok_or("`ddl` must be a string")?.to_owned();
        let schema = self.db.schema.clone();
        self.db
            .block(move |client| async move { catalog::admin_batch(&client, &schema, &ddl).await })
            .map_err(|e| e.message)?;
        Ok(json!({"applied": true}))
    }
}
