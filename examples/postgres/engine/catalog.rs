//! What a role sees of the served schema (read as that role): the tables and views it holds a
//! privilege on, with their columns, and the functions it may execute; their catalog entries;
//! and the harnesses' fingerprint of the schema and its rows.
//!
//! A function's entry risk does not under-state what calling it may do: `safe` only for an
//! `IMMUTABLE` or `STABLE` function of a trusted language that runs as its caller; `write` for
//! a volatile one (it may change data) or a `SECURITY DEFINER` one (it acts with its owner's
//! privileges, beyond the caller's grants); `external` for one in an untrusted language (C,
//! `internal`, `plpython3u`, ...), which can reach outside the database.

use pilotage::model::closed_sets::RiskLevel;
use pilotage::prelude::*;
use tokio_postgres::{Client, GenericClient};

use super::db::{ident, PgError};
use super::digest::fingerprint;
use super::{PgKind, PgRisk};

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
    /// `VOLATILE`: it may change data.
    pub volatile: bool,
    /// `SECURITY DEFINER`: it runs with its owner's privileges.
    pub definer: bool,
    /// Its language is untrusted (`lanpltrusted` false: C, `internal`, `plpython3u`, ...).
    pub untrusted: bool,
    /// The language's name.
    pub language: String,
    /// The input parameters: (name, or `$k` when unnamed; `format_type`).
    pub parameters: Vec<(String, String)>,
    /// How many of the last parameters have defaults.
    pub defaults: usize,
}

/// What the role sees of the schema.
#[derive(Clone, Debug, Default)]
pub struct Schema {
    pub relations: Vec<Relation>,
    pub functions: Vec<Function>,
}

/// A stamp of everything a role's catalog of `schema` is read from, in one query as the login
/// role: the schema, its relations, their columns and comments, its functions, role
/// memberships and whether `role` exists. Any DDL, GRANT, REVOKE, COMMENT or membership change
/// rewrites one of those rows (a new `xmin`), so an equal stamp means an equal catalog and the
/// kept snapshot serves: one round trip instead of the introspection's five.
///
/// The schema and role are literals, not parameters: a statement without parameters keeps its
/// one plan on the connection, where a parameterized one was planned again on every call
/// (0.5-0.9 ms); columns and comments are looked up through their indexes by the relations'
/// oids instead of hash-joined against whole catalogs; relations and functions are read through
/// `pg_class`'s and `pg_proc`'s oid indexes from 16384 (`FirstNormalObjectId`: every object
/// created after `initdb` has an oid from there, even after the oid counter wraps), where
/// scanning the whole catalogs (their rows are mostly PostgreSQL's own) took most of the query's
/// time. A schema that `initdb` filled (`pg_catalog`, `information_schema`) is read whole.
/// Measured with `pgbench -M prepared` on a schema of one table, round trip included: 0.12-0.16
/// ms a call, against 0.18-0.24 ms with `pg_class` scanned, 0.43-0.54 ms with `pg_proc` too, and
/// 1.16 ms before the literals (`SELECT 1`: 0.04 ms).
pub async fn stamp(
    client: &deadpool_postgres::ClientWrapper,
    schema: &str,
    role: Option<&str>,
) -> Result<String, PgError> {
    // Prepared once per connection and role: one round trip per call.
    let statement = client.prepare_cached(&stamp_sql(schema, role)).await?;
    let row = client.query_one(&statement, &[]).await?;
    Ok(row.get::<_, Option<String>>(0).unwrap_or_default())
}

/// The query of [`stamp`]: one row, one text column.
fn stamp_sql(schema: &str, role: Option<&str>) -> String {
    let role = role.map(ident).unwrap_or_else(|| "current_user".to_owned());
    let first = if matches!(schema, "pg_catalog" | "information_schema") { 0 } else { 16384 };
    let (schema, role) = (literal(schema), literal(&role));
    format!(
        "WITH n AS (SELECT oid, xmin FROM pg_namespace WHERE nspname = {schema}), \
              r AS (SELECT c.oid, c.xmin FROM pg_class c JOIN n ON c.relnamespace = n.oid \
                 WHERE c.oid >= {first}) \
         SELECT concat_ws('|', (SELECT xmin::text FROM n), \
              (SELECT count(*) || ':' || coalesce(max(xmin::text::bigint), 0) FROM r), \
              (SELECT count(*) || ':' || coalesce(max(a.xmin::text::bigint), 0) FROM pg_attribute a \
                 WHERE a.attrelid = ANY (ARRAY(SELECT oid FROM r))), \
              (SELECT count(*) || ':' || coalesce(max(d.xmin::text::bigint), 0) FROM pg_description d \
                 WHERE d.objoid = ANY (ARRAY(SELECT oid FROM r))), \
              (SELECT count(*) || ':' || coalesce(max(p.xmin::text::bigint), 0) FROM pg_proc p \
                 WHERE p.oid >= {first} AND p.pronamespace = (SELECT oid FROM n)), \
              (SELECT count(*) || ':' || coalesce(max(m.xmin::text::bigint), 0) FROM pg_auth_members m), \
              to_regrole({role})::oid::text, \
              (SELECT (rolsuper OR rolbypassrls)::text FROM pg_roles WHERE oid = to_regrole({role})))"
    )
}

/// What a guard that finds the catalog moved raises: a cast of this text to an integer, which
/// PostgreSQL refuses (SQLSTATE 22P02), aborting the transaction it runs in.
pub const MOVED: &str = "pilotage: catalog moved since ";

/// A statement that confirms, inside a run's transaction, that the catalog of `schema` as seen
/// by `role` is still the one of stamp `kept` (the run's snapshot was kept, not proven current:
/// see `pilotage::engine::confirm`): its one row when it is, else it fails (with [`MOVED`]) and
/// so does every statement after it in the transaction. The failing branch is not a constant
/// (PostgreSQL would fold a constant cast when planning), and catalogs read as the role are the
/// ones read as the login role (PostgreSQL grants them to PUBLIC).
pub fn guard_sql(schema: &str, role: Option<&str>, kept: &str) -> String {
    format!(
        "SELECT CASE WHEN ({}) = {} THEN 0 ELSE ('{MOVED}' || current_user)::int END",
        stamp_sql(schema, role),
        literal(kept)
    )
}

/// `text` as an SQL string literal, whatever `standard_conforming_strings` says: `E'...'` with
/// its backslashes and quotes doubled.
pub(crate) fn literal(text: &str) -> String {
    format!("E'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
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
                    pg_get_function_result(p.oid), p.provolatile = 'v', p.prosecdef, NOT l.lanpltrusted, \
                    l.lanname, coalesce(p.proargnames, '{}'), coalesce(p.proargmodes::text[], '{}'), \
                    ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(t, k) ORDER BY k), \
                    p.pronargdefaults::int \
             FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang \
             WHERE n.nspname = $1 AND p.prokind = 'f' AND has_function_privilege(p.oid, 'EXECUTE') \
             ORDER BY p.proname, 2",
            &[&schema],
        )
        .await?
        .iter()
        .map(|r| {
            let name: String = r.get(0);
            let identity: String = r.get(1);
            let (names, modes, types): (Vec<String>, Vec<String>, Vec<String>) = (r.get(8), r.get(9), r.get(10));
            Function {
                id: format!("{name}({identity})"),
                name,
                arguments: r.get(2),
                result: r.get::<_, Option<String>>(3).unwrap_or_default(),
                volatile: r.get(4),
                definer: r.get(5),
                untrusted: r.get(6),
                language: r.get(7),
                parameters: parameters(&names, &modes, types),
                defaults: usize::try_from(r.get::<_, i32>(11)).unwrap_or(0),
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

/// The input parameters of a function: `names` and `modes` as `pg_proc` holds them (over all
/// arguments, modes empty when all are inputs), `types` those of the inputs.
fn parameters(names: &[String], modes: &[String], types: Vec<String>) -> Vec<(String, String)> {
    let input_names: Vec<&str> = if modes.is_empty() {
        names.iter().map(String::as_str).collect()
    } else {
        names
            .iter()
            .zip(modes)
            .filter(|(_, m)| matches!(m.as_str(), "i" | "b" | "v"))
            .map(|(n, _)| n.as_str())
            .collect()
    };
    types
        .into_iter()
        .enumerate()
        .map(|(k, ty)| {
            let name = input_names
                .get(k)
                .filter(|n| !n.is_empty())
                .map_or_else(|| format!("${}", k + 1), |n| (*n).to_owned());
            (name, ty)
        })
        .collect()
}

impl Function {
    /// The risk of calling it (see the module documentation) and why, when not `safe`.
    pub fn risk(&self) -> (PgRisk, Vec<String>) {
        let mut why = Vec::new();
        if self.untrusted {
            why.push(format!(
                "its language `{}` is untrusted: it can reach outside the database",
                self.language
            ));
        }
        if self.definer {
            why.push("SECURITY DEFINER: it acts with its owner's privileges, beyond your grants".to_owned());
        }
        if self.volatile {
            why.push("VOLATILE: it may change data".to_owned());
        }
        let risk = if self.untrusted {
            PgRisk::External
        } else if self.definer || self.volatile {
            PgRisk::Write
        } else {
            PgRisk::Safe
        };
        (risk, why)
    }

    /// Its parameters as a JSON object schema (unnamed ones as `$k`; those with defaults
    /// optional).
    fn input_schema(&self) -> Json {
        let mut properties = serde_json::Map::new();
        let mut required = Vec::new();
        let needed = self.parameters.len().saturating_sub(self.defaults);
        for (k, (name, ty)) in self.parameters.iter().enumerate() {
            let mut p = serde_json::Map::new();
            if let Some(t) = json_type(ty) {
                p.insert("type".into(), json!(t));
            }
            p.insert("description".into(), json!(ty));
            properties.insert(name.clone(), Json::Object(p));
            if k < needed {
                required.push(name.clone());
            }
        }
        json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
    }

    /// The catalog entry.
    pub fn entry(&self) -> CatalogEntry {
        let (risk, why) = self.risk();
        let plans = match risk {
            PgRisk::Safe => String::new(),
            _ => format!("; calls plan as {}: {}", risk.wire(), why.join("; ")),
        };
        let mut e = CatalogEntry::new(self.id.clone(), PgKind::Function, self.name.clone(), risk)
            .description(format!(
                "Function {}({}) returning {}{plans}.",
                self.name, self.arguments, self.result
            ))
            .input_schema(self.input_schema())
            .tag("function");
        for (on, tag) in [
            (self.volatile, "volatile"),
            (self.definer, "security_definer"),
            (self.untrusted, "untrusted_language"),
        ] {
            if on {
                e = e.tag(tag);
            }
        }
        e
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
