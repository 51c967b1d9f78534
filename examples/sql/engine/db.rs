//! The session's database: an in-memory SQLite connection (a private copy of the source),
//! guarded by an authorizer that lets programs do only what the Language allows, the demo
//! schema, schema introspection, the catalog entries derived from the schema (never from
//! rows), and the fingerprint.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pilotage::engine::Signal;
use pilotage::prelude::*;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use super::digest::fingerprint;
use super::kept::Checks;
use super::{SqlKind, SqlRisk};

/// The demo schema: two STRICT tables and a view over them.
pub const DEMO_SCHEMA: &str = "
CREATE TABLE customers (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  email TEXT NOT NULL UNIQUE,
  tier TEXT NOT NULL DEFAULT 'bronze' CHECK (tier IN ('gold', 'silver', 'bronze'))
) STRICT;
CREATE TABLE orders (
  id INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customers (id),
  item TEXT NOT NULL,
  quantity INTEGER NOT NULL CHECK (quantity > 0),
  price REAL NOT NULL
) STRICT;
CREATE VIEW order_totals AS
  SELECT c.id AS customer_id, c.name AS name, count(o.id) AS orders,
         coalesce(sum(o.quantity * o.price), 0.0) AS total
  FROM customers AS c LEFT JOIN orders AS o ON o.customer_id = c.id
  GROUP BY c.id;
";

/// The demo rows.
pub const DEMO_ROWS: &str = "
INSERT INTO customers (id, name, email, tier) VALUES
  (1, 'Amira Hassan', 'amira@example.com', 'gold'),
  (2, 'Tomás Silva', 'tomas@example.com', 'silver'),
  (3, 'Mei Chen', 'mei@example.com', 'bronze');
INSERT INTO orders (id, customer_id, item, quantity, price) VALUES
  (1, 1, 'keyboard', 1, 49.5),
  (2, 1, 'mouse', 2, 19.0),
  (3, 2, 'monitor', 1, 189.0),
  (4, 3, 'cable', 3, 4.5);
";

/// Functions programs may call (anything else is `forbidden_statement`).
pub const FUNCTIONS: &[&str] = &[
    "abs",
    "avg",
    "char",
    "coalesce",
    "count",
    "date",
    "datetime",
    "group_concat",
    "hex",
    "ifnull",
    "iif",
    "instr",
    "json_array",
    "json_extract",
    "json_group_array",
    "json_object",
    "julianday",
    "length",
    "lower",
    "ltrim",
    "max",
    "min",
    "nullif",
    "printf",
    "quote",
    "replace",
    "round",
    "rtrim",
    "strftime",
    "substr",
    "substring",
    "sum",
    "time",
    "total",
    "trim",
    "typeof",
    "unicode",
    "unixepoch",
    "upper",
];

/// Column type as the Language reads a declared type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColType {
    Integer,
    Real,
    Text,
    Blob,
    Any,
}

impl ColType {
    /// SQLite's affinity rules (section 3.1 of its datatype page), on the declared type.
    fn of(declared: &str) -> ColType {
        let d = declared.to_ascii_uppercase();
        if d.contains("INT") {
            ColType::Integer
        } else if d.contains("CHAR") || d.contains("CLOB") || d.contains("TEXT") {
            ColType::Text
        } else if d.contains("BLOB") {
            ColType::Blob
        } else if d.contains("REAL") || d.contains("FLOA") || d.contains("DOUB") {
            ColType::Real
        } else if d.is_empty() || d == "ANY" {
            ColType::Any
        } else {
            ColType::Real
        }
    }

    fn json_type(self) -> Option<&'static str> {
        match self {
            ColType::Integer => Some("integer"),
            ColType::Real => Some("number"),
            ColType::Text | ColType::Blob => Some("string"),
            ColType::Any => None,
        }
    }
}

/// One column.
#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    pub declared: String,
    pub ty: ColType,
    pub not_null: bool,
    pub has_default: bool,
    pub primary_key: bool,
}

/// One user table or view.
#[derive(Clone, Debug)]
pub struct Table {
    pub name: String,
    pub view: bool,
    pub strict: bool,
    pub columns: Vec<Column>,
}

impl Table {
    /// The column `name` (case-insensitive, as SQL names are).
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name.eq_ignore_ascii_case(name))
    }

    fn row_schema(&self, for_insert: bool) -> Json {
        let mut properties = serde_json::Map::new();
        let mut required = Vec::new();
        for c in &self.columns {
            let mut p = serde_json::Map::new();
            if let Some(t) = c.ty.json_type() {
                let nullable = !c.not_null || (for_insert && c.primary_key);
                p.insert("type".into(), if nullable { json!([t, "null"]) } else { json!(t) });
            }
            if c.ty == ColType::Blob {
                p.insert("contentEncoding".into(), json!("base16"));
            }
            let mut about = c.declared.clone();
            if c.primary_key {
                about.push_str(" PRIMARY KEY");
            }
            if c.not_null {
                about.push_str(" NOT NULL");
            }
            p.insert("description".into(), json!(about.trim()));
            properties.insert(c.name.clone(), Json::Object(p));
            let needed = if for_insert { c.not_null && !c.has_default && !c.primary_key } else { true };
            if needed {
                required.push(c.name.clone());
            }
        }
        json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
    }

    /// The catalog entry: schema-derived fields only, so rows never move `catalog_version`.
    pub fn entry(&self) -> CatalogEntry {
        let names: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
        if self.view {
            CatalogEntry::new(self.name.clone(), SqlKind::View, self.name.clone(), SqlRisk::Safe)
                .description(format!(
                    "View with columns {}. Read-only: statements may only read it (SELECT).",
                    names.join(", ")
                ))
                .input_schema(json!({"type": "object", "properties": {}, "additionalProperties": false}))
                .output_schema(self.row_schema(false))
                .tag("view")
        } else {
            let mut e =
                CatalogEntry::new(self.name.clone(), SqlKind::Table, self.name.clone(), SqlRisk::Destructive)
                    .description(format!(
                        "Table with columns {}{}. Statements may read it (SELECT), write it (INSERT, UPDATE) and delete from or drop it (DELETE, DROP TABLE): its entry risk is destructive. input_schema is a row you can INSERT, output_schema a row you SELECT.",
                        names.join(", "),
                        if self.strict { " (STRICT: values must have the declared types)" } else { "" }
                    ))
                    .input_schema(self.row_schema(true))
                    .output_schema(self.row_schema(false))
                    .tag("table");
            if self.strict {
                e = e.tag("strict");
            }
            e
        }
    }
}

/// The connection and the switches its hooks read.
pub struct Db {
    pub conn: Connection,
    /// While set, the authorizer allows everything (the engine's own bookkeeping and the
    /// admin tools); otherwise it enforces the Language.
    admin: Arc<AtomicBool>,
    /// Why the authorizer refused, since the last [`Db::take_denials`].
    denials: Arc<Mutex<Vec<String>>>,
    /// When set, statements still running at this instant are interrupted.
    deadline: Arc<Mutex<Option<Instant>>>,
    /// The tables as read at a `PRAGMA schema_version` (see [`Db::tables`]).
    kept: Mutex<Option<(i64, Vec<Table>)>>,
    /// Programs checked without error, for the runs that follow their validations.
    pub checks: Checks,
}

fn is_allowed_function(name: &str) -> bool {
    FUNCTIONS.contains(&name.to_ascii_lowercase().as_str())
}

impl Db {
    fn wrap(conn: Connection) -> Result<Db, String> {
        let db = Db {
            conn,
            admin: Arc::new(AtomicBool::new(false)),
            denials: Arc::default(),
            deadline: Arc::default(),
            kept: Mutex::default(),
            checks: Checks::default(),
        };
        db.conn.execute_batch("PRAGMA foreign_keys = ON;").map_err(|e| e.to_string())?;
        // Validation and runs prepare a program's statements through this cache (the engine's
        // own statements never do, so every cached statement passed the enforcing authorizer,
        // which SQLite calls again whenever a schema change makes it prepare one anew).
        db.conn.set_prepared_statement_cache_capacity(64);
        let (admin, denials) = (db.admin.clone(), db.denials.clone());
        db.conn.authorizer(Some(move |ctx: AuthContext<'_>| {
            if admin.load(Ordering::SeqCst) {
                return Authorization::Allow;
            }
            let denied = match ctx.action {
                AuthAction::Select
                | AuthAction::Read { .. }
                | AuthAction::Insert { .. }
                | AuthAction::Update { .. }
                | AuthAction::Delete { .. }
                | AuthAction::Recursive
                | AuthAction::DropTable { .. } => None,
                AuthAction::Function { function_name } => (ctx.accessor.is_none()
                    && !is_allowed_function(function_name))
                .then(|| format!("function {function_name}()")),
                other => Some(format!("{other:?}")),
            };
            match denied {
                None => Authorization::Allow,
                Some(what) => {
                    denials.lock().unwrap_or_else(|p| p.into_inner()).push(what);
                    Authorization::Deny
                }
            }
        }));
        let deadline = db.deadline.clone();
        // Every statement (runs, validation's `prepare`, the admin tools) is interrupted once the
        // engine call running it is cancelled or past its deadline, or past the run's own
        // deadline: a runaway statement stops within the call's time bound.
        db.conn.progress_handler(
            1000,
            Some(move || {
                Signal::current().is_cancelled()
                    || deadline.lock().unwrap_or_else(|p| p.into_inner()).is_some_and(|d| Instant::now() >= d)
            }),
        );
        db.admin(bound)?;
        Ok(db)
    }

    /// An in-memory database with the demo schema and rows.
    pub fn demo() -> Db {
        let conn = Connection::open_in_memory().expect("an in-memory SQLite database");
        conn.execute_batch(DEMO_SCHEMA).expect("the demo schema");
        conn.execute_batch(DEMO_ROWS).expect("the demo rows");
        Db::wrap(conn).expect("the demo database")
    }

    /// A private in-memory copy of the database at `path`, made with the backup API.
    pub fn copy_of(path: &Path) -> Result<Db, String> {
        let src =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI)
                .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let mut dst = Connection::open_in_memory().map_err(|e| e.to_string())?;
        {
            let backup = rusqlite::backup::Backup::new(&src, &mut dst).map_err(|e| e.to_string())?;
            backup
                .run_to_completion(256, std::time::Duration::from_millis(0), None)
                .map_err(|e| format!("cannot copy {}: {e}", path.display()))?;
        }
        Db::wrap(dst)
    }

    /// Run `f` with the authorizer open (the engine's own statements).
    pub fn admin<T>(&self, f: impl FnOnce(&Connection) -> T) -> T {
        self.admin.store(true, Ordering::SeqCst);
        let out = f(&self.conn);
        self.admin.store(false, Ordering::SeqCst);
        out
    }

    /// What the authorizer refused since the last call.
    pub fn take_denials(&self) -> Vec<String> {
        std::mem::take(&mut *self.denials.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Interrupt statements still running at `deadline` (`None`: never).
    pub fn set_deadline(&self, deadline: Option<Instant>) {
        *self.deadline.lock().unwrap_or_else(|p| p.into_inner()) = deadline;
    }

    /// The user tables and views with their columns, by name (SQLite's own `sqlite_*`
    /// tables are not part of the Language). Kept until the schema changes (SQLite's
    /// `schema_version`, which every schema change moves): reading them costs a query per
    /// table, and every validation and run reads them (22% of a small run's instructions).
    pub fn tables(&self) -> Vec<Table> {
        self.tables_at(self.schema_version())
    }

    /// [`Db::tables`] where the caller has just read the schema's `version`.
    pub fn tables_at(&self, version: Option<i64>) -> Vec<Table> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let (Some(version), Some((at, tables))) = (version, kept.as_ref()) {
            if *at == version {
                return tables.clone();
            }
        }
        let tables = self.read_tables();
        *kept = version.map(|v| (v, tables.clone()));
        tables
    }

    /// Runs a transaction's `BEGIN IMMEDIATE`, `COMMIT` or `ROLLBACK` as the engine's own
    /// statement, prepared once: every run opens and ends a transaction.
    pub fn control(&self, sql: &str) -> rusqlite::Result<()> {
        self.admin(|conn| conn.prepare_cached(sql).and_then(|mut s| s.execute([])).map(|_| ()))
    }

    /// SQLite's `schema_version`, which every schema change moves; `None` when it cannot be
    /// read.
    pub fn schema_version(&self) -> Option<i64> {
        // Cached: every validation and run reads it, and parsing it anew was 1.5% of a small
        // run's time under load.
        self.admin(|conn| {
            conn.prepare_cached("PRAGMA schema_version")
                .and_then(|mut s| s.query_row([], |r| r.get::<_, i64>(0)))
        })
        .ok()
    }

    /// The tables as the schema holds them now (see [`Db::tables`]).
    fn read_tables(&self) -> Vec<Table> {
        self.admin(|conn| {
            let listed: Vec<(String, String)> = conn
                .prepare(
                    "SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') \
                     AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
                )
                .and_then(|mut s| {
                    s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<Vec<_>, _>>()
                })
                .unwrap_or_default();
            listed
                .into_iter()
                .map(|(name, kind)| {
                    let strict = conn
                        .query_row("SELECT strict FROM pragma_table_list WHERE name = ?1 AND schema = 'main'", [&name], |r| {
                            r.get::<_, i64>(0)
                        })
                        .map(|s| s == 1)
                        .unwrap_or(false);
                    let columns = conn
                        .prepare("SELECT name, type, \"notnull\", dflt_value IS NOT NULL, pk FROM pragma_table_info(?1)")
                        .and_then(|mut s| {
                            s.query_map([&name], |r| {
                                let declared: String = r.get(1)?;
                                Ok(Column {
                                    name: r.get(0)?,
                                    ty: ColType::of(&declared),
                                    declared,
                                    not_null: r.get::<_, i64>(2)? == 1,
                                    has_default: r.get::<_, i64>(3)? == 1,
                                    primary_key: r.get::<_, i64>(4)? > 0,
                                })
                            })?
                            .collect::<Result<Vec<_>, _>>()
                        })
                        .unwrap_or_default();
                    Table { name, view: kind == "view", strict, columns }
                })
                .collect()
        })
    }

    /// The catalog entries.
    pub fn entries(&self) -> Vec<CatalogEntry> {
        self.tables().iter().map(Table::entry).collect()
    }

    /// A digest of the schema and every row, with each table's row count.
    pub fn fingerprint(&self) -> Result<Json, String> {
        let tables = self.tables();
        self.admin(|conn| {
            let mut canonical = String::new();
            let schema: Vec<String> = conn
                .prepare("SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_schema ORDER BY type, name")
                .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
                .map_err(|e| e.to_string())?;
            canonical.push_str(&schema.join("\n"));
            let mut counts = serde_json::Map::new();
            for t in tables.iter().filter(|t| !t.view) {
                let mut stmt = conn.prepare(&format!("SELECT * FROM {}", quote(&t.name))).map_err(|e| e.to_string())?;
                let n = stmt.column_count();
                let mut rows: Vec<String> = stmt
                    .query_map([], |r| {
                        let cells: Vec<Json> = (0..n).map(|i| r.get_ref(i).map(cell)).collect::<Result<_, _>>()?;
                        Ok(Json::Array(cells).to_string())
                    })
                    .and_then(|it| it.collect())
                    .map_err(|e| e.to_string())?;
                rows.sort();
                canonical.push_str(&format!("\n{}:\n{}", t.name, rows.join("\n")));
                counts.insert(t.name.clone(), json!(rows.len()));
            }
            Ok(json!({"fingerprint": fingerprint(canonical.as_bytes()), "rows": counts}))
        })
    }
}

/// SQLite's own limits on every connection, so no statement can make it build a value, a
/// statement or a database the server cannot afford (the defaults allow 1 GB strings).
pub const LIMITS: &[(Limit, i32)] = &[
    (Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES),
    (Limit::SQLITE_LIMIT_SQL_LENGTH, 1 << 20),
    (Limit::SQLITE_LIMIT_COLUMN, 200),
    (Limit::SQLITE_LIMIT_EXPR_DEPTH, 200),
    (Limit::SQLITE_LIMIT_COMPOUND_SELECT, 100),
    (Limit::SQLITE_LIMIT_VDBE_OP, 100_000),
    (Limit::SQLITE_LIMIT_FUNCTION_ARG, 100),
    (Limit::SQLITE_LIMIT_ATTACHED, 0),
    (Limit::SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 10_000),
    (Limit::SQLITE_LIMIT_VARIABLE_NUMBER, 1000),
    (Limit::SQLITE_LIMIT_TRIGGER_DEPTH, 10),
];

/// The largest string or blob (and row) SQLite may build: 1 MiB.
pub const MAX_VALUE_BYTES: i32 = 1 << 20;

/// The largest database a session's copy may grow to, in 4 KiB pages (64 MiB).
pub const MAX_PAGES: u32 = 16_384;

/// Install [`LIMITS`] and [`MAX_PAGES`] on `conn`.
fn bound(conn: &Connection) -> Result<(), String> {
    for (limit, value) in LIMITS {
        conn.set_limit(*limit, *value).map_err(|e| e.to_string())?;
    }
    conn.pragma_update(None, "max_page_count", MAX_PAGES).map_err(|e| e.to_string())
}

/// A value as JSON: NULL → null, INTEGER → integer, REAL → number, TEXT → string, BLOB →
/// lowercase hexadecimal string.
pub fn cell(v: ValueRef<'_>) -> Json {
    match v {
        ValueRef::Null => Json::Null,
        ValueRef::Integer(i) => json!(i),
        ValueRef::Real(f) => json!(f),
        ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
        ValueRef::Blob(b) => json!(b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
    }
}

/// An identifier quoted for SQLite.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Create the database file at `path` with the demo schema and rows, unless it exists.
/// Returns whether it was created.
pub fn seed_file(path: &Path) -> Result<bool, String> {
    if path.exists() {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let tmp = path.with_extension("seeding");
    let _ = std::fs::remove_file(&tmp);
    let conn = Connection::open(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    conn.execute_batch(DEMO_SCHEMA).map_err(|e| e.to_string())?;
    conn.execute_batch(DEMO_ROWS).map_err(|e| e.to_string())?;
    drop(conn);
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    Ok(true)
}
