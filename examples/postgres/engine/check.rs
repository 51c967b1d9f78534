//! Validation and the plan.
//!
//! Two passes. First, per statement and without the database: the leading keyword (statements
//! outside the Language are `forbidden_statement`), placeholders, the parse (sqlparser,
//! PostgreSQL dialect), the statement kind, functions against the deny-list, and every
//! relation against the caller's catalog snapshot (unknown names, views PostgreSQL cannot
//! write through, privileges the caller's role lacks). Second, PostgreSQL itself, in one
//! transaction as the caller's role that is always rolled back: each statement is prepared
//! (DDL of the allow-list is run, so later statements see its effect), and an `UPDATE` or
//! `DELETE` without `WHERE` is explained (never analyzed) for its row estimate. PostgreSQL's
//! SQLSTATE becomes a closed diagnostic code at the text range of its error position.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use pilotage::engine::catalog::edit_distance;
use pilotage::prelude::*;
use sqlparser::ast::{
    Expr, FromTable, ObjectName, ObjectNamePart, ObjectType, Query, SetExpr, Spanned, Statement as Ast,
    TableFactor, TableObject, Value, Visit, Visitor,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Span, Token};

use super::db::{self, Db, PgError};
use super::text::{self, range, token_range, BadPlaceholder, Source, Statement};
use super::{PgCode, PgRisk};

/// How long PostgreSQL may take over one validation's statements.
pub const VALIDATE_TIMEOUT: Duration = Duration::from_secs(3);

/// What a statement does to a relation, least risky first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    Read,
    Call,
    Insert,
    Update,
    /// `UPDATE` without `WHERE`.
    UpdateAll,
    Create,
    Delete,
    Truncate,
    Alter,
    Drop,
}

impl Access {
    /// The word the trace and messages use.
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Call => "call",
            Access::Insert => "insert",
            Access::Update | Access::UpdateAll => "update",
            Access::Create => "create",
            Access::Delete => "delete",
            Access::Truncate => "truncate",
            Access::Alter => "alter",
            Access::Drop => "drop",
        }
    }

    fn risk(self) -> PgRisk {
        match self {
            Access::Read | Access::Call => PgRisk::Safe,
            Access::Insert | Access::Update | Access::Create => PgRisk::Write,
            Access::UpdateAll | Access::Delete | Access::Truncate | Access::Alter | Access::Drop => {
                PgRisk::Destructive
            }
        }
    }

    /// The privilege tag the caller's catalog entry must carry.
    fn privilege(self) -> Option<&'static str> {
        match self {
            Access::Read => Some("select"),
            Access::Insert => Some("insert"),
            Access::Update | Access::UpdateAll => Some("update"),
            Access::Delete => Some("delete"),
            _ => None,
        }
    }
}

/// One reference sub-step.
#[derive(Clone, Debug)]
pub struct Ref {
    pub entry: String,
    pub access: Access,
    pub risk: PgRisk,
}

/// One statement that passed the first pass, ready for PostgreSQL.
#[derive(Clone, Debug)]
pub struct Checked {
    pub id: String,
    /// The statement as written.
    pub sql: String,
    /// The statement as PostgreSQL sees it: `:name` placeholders become `$1`, `$2`, ...
    pub pg_sql: String,
    /// The placeholder names, `$1` first.
    pub names: Vec<String>,
    /// Schema definition (run, not prepared).
    pub ddl: bool,
    /// `CREATE TABLE ... AS`: validation runs it `WITH NO DATA`, so its query (and any
    /// function it calls) never executes before the run.
    as_query: bool,
    /// `UPDATE` or `DELETE` without `WHERE`: its row estimate is worth a warning.
    pub unqualified: bool,
    pub risk: PgRisk,
    pub refs: Vec<Ref>,
    /// (first character in `pg_sql`, its length there, its length as written) of each
    /// placeholder, to map PostgreSQL's positions back to the text.
    shifts: Vec<(usize, usize, usize)>,
    /// sqlparser could not parse it: PostgreSQL's own error is more precise, and when
    /// PostgreSQL accepts it, this message refuses it.
    unparsed: Option<(String, Option<Location>)>,
    /// Where the statement starts in the program (bytes).
    start_byte: usize,
    /// Relation name → where the statement names it.
    spans: Vec<(String, Span)>,
}

/// Leading words of statements outside the Language, with the reason and a hint.
fn forbidden_word(word: &str, next: &str) -> Option<(&'static str, &'static str)> {
    let tx = ("every run already is one transaction", "remove the transaction statement");
    let session = (
        "programs do not change the session or its settings",
        "the server sets the role, search_path and timeouts of every run",
    );
    Some(match (word, next) {
        ("BEGIN" | "START" | "COMMIT" | "END" | "ROLLBACK" | "ABORT" | "SAVEPOINT" | "RELEASE", _) => tx,
        ("PREPARE" | "EXECUTE" | "DEALLOCATE", _) => tx,
        ("SET" | "RESET" | "DISCARD" | "LISTEN" | "UNLISTEN" | "NOTIFY" | "LOAD" | "SHOW", _) => session,
        ("COPY" | "IMPORT", _) => (
            "COPY reads and writes files and programs of the server",
            "read rows with SELECT and add them with INSERT",
        ),
        ("DO" | "CALL", _) => ("procedural code is outside the Language", "write the statements themselves"),
        ("GRANT" | "REVOKE" | "SECURITY" | "REASSIGN", _) => {
            ("privileges are the database administrator's", "ask an administrator for the grant")
        }
        ("VACUUM" | "ANALYZE" | "CLUSTER" | "REINDEX" | "CHECKPOINT" | "REFRESH" | "LOCK" | "COMMENT", _) => {
            ("database maintenance is outside the Language", "remove the statement")
        }
        ("EXPLAIN", _) => ("EXPLAIN is not part of the Language", "validate_sql returns the plan of a program"),
        ("CREATE", "TABLE" | "VIEW" | "INDEX" | "UNIQUE" | "OR") => return None,
        ("ALTER", "TABLE") => return None,
        ("DROP", "TABLE" | "VIEW" | "INDEX") => return None,
        ("CREATE" | "ALTER" | "DROP", _) => (
            "only tables, views and indexes may be created, altered or dropped: roles, extensions, functions, schemas and the system are the administrator's",
            "see the allow-list in the sql-pg-core guide",
        ),
        _ => return None,
    })
}

/// Functions a program may not call: files, large objects, other servers, other sessions,
/// settings, locks, and SQL hidden in strings (which would escape validation).
const DENIED_FUNCTIONS: &[&str] = &[
    "pg_read_",
    "pg_ls_",
    "pg_stat_file",
    "pg_file_",
    "lo_",
    "dblink",
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_signal_backend",
    "pg_reload_conf",
    "pg_rotate_logfile",
    "pg_promote",
    "pg_switch_wal",
    "pg_backup_",
    "pg_start_backup",
    "pg_stop_backup",
    "pg_create_",
    "pg_drop_",
    "pg_replication_",
    "pg_logical_",
    "pg_advisory",
    "pg_try_advisory",
    "pg_notify",
    "pg_import_system_collations",
    "set_config",
    "query_to_",
    "table_to_",
    "cursor_to_",
    "schema_to_",
    "database_to_",
];

/// Whether `name` (lower case, unqualified) is on the deny-list.
pub fn denied_function(name: &str) -> bool {
    DENIED_FUNCTIONS.iter().any(|d| {
        if d.ends_with('_') {
            name.starts_with(d)
        } else {
            name == *d || name.starts_with(&format!("{d}_"))
        }
    })
}

fn span_range(s: Span) -> TextRange {
    range(s.start, s.end)
}

/// An identifier as PostgreSQL resolves it: unquoted names fold to lower case.
fn folded(part: &ObjectNamePart) -> String {
    match part {
        ObjectNamePart::Identifier(i) if i.quote_style.is_some() => i.value.clone(),
        ObjectNamePart::Identifier(i) => i.value.to_lowercase(),
        ObjectNamePart::Function(f) => f.name.value.to_lowercase(),
    }
}

/// The closest of `candidates` to `name` (edit distance at most 3), for hints.
fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    if name.chars().count() > 64 {
        return None;
    }
    candidates
        .take(4096)
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= 3.min(name.len().max(1)))
        .min()
        .map(|(_, c)| c)
}

/// Validate `program` (see the module documentation) and report the plan of a valid one.
pub fn validate(db: &Arc<Db>, program: &Json, v: &mut Validation<PgCode, PgRisk>) {
    let checked = check(db, program, v);
    if v.has_errors() {
        return;
    }
    for c in checked {
        v.step(c.id.clone(), c.risk);
        for (k, r) in c.refs.iter().enumerate() {
            v.step(format!("{}.ref-{}", c.id, k + 1), r.risk).calls(r.entry.clone());
        }
    }
}

/// Both passes over `program`, findings reported on `v`; the statements that passed (all of
/// them when `v` has no error).
pub fn check(db: &Arc<Db>, program: &Json, v: &mut Validation<PgCode, PgRisk>) -> Vec<Checked> {
    let (src, statements) = match text::statements(program, &PostgreSqlDialect {}) {
        Ok(found) => found,
        Err(e) => {
            let code = if e.malformed { PgCode::MalformedProgram } else { PgCode::SyntaxError };
            let d = v.error(code, e.range, e.message);
            if let Some(h) = e.hint {
                d.hint(h);
            }
            return Vec::new();
        }
    };
    let mut names = Names { schema: db.schema.clone(), created: Vec::new(), dropped: Vec::new() };
    let first: Vec<(Statement, Checked)> = statements
        .into_iter()
        .filter_map(|stmt| {
            let c = analyze(&src, &stmt, &mut names, v)?;
            Some((stmt, c))
        })
        .collect();
    if first.is_empty() || v.is_cancelled() {
        return Vec::new();
    }
    let role = db.roles.of(v.caller());
    let session = db.session_sql(role.as_deref(), VALIDATE_TIMEOUT);
    let work: Vec<Checked> = first.iter().map(|(_, c)| c.clone()).collect();
    let answers = db.block(move |mut client| async move {
        let tx = client.transaction().await?;
        db::begin(&tx, &session, role.as_deref()).await?;
        let mut answers = Vec::new();
        for c in &work {
            answers.push(ask(&tx, c).await);
        }
        let _ = tx.rollback().await;
        Ok(answers)
    });
    let answers = match answers {
        Ok(a) => a,
        Err(e) => {
            let code = if e.code == "42501" { PgCode::PermissionDenied } else { PgCode::Unavailable };
            v.error(code, src.whole(), format!("PostgreSQL could not check the program: {e}"));
            return Vec::new();
        }
    };
    let mut passed = Vec::new();
    for ((stmt, c), answer) in first.into_iter().zip(answers) {
        match answer {
            Err(e) => report(&src, &stmt, &c, &e, v),
            Ok(_) if c.unparsed.is_some() => {
                let (message, at) = c.unparsed.clone().unwrap_or_default();
                let where_ = at.and_then(|l| stmt.token_at(l)).map(token_range).unwrap_or(stmt.range);
                v.error(PgCode::SyntaxError, where_, format!("outside the Language's grammar: {message}"))
                    .hint("PostgreSQL accepts it, but the validator cannot read it: rewrite it in the forms of the sql-pg-core guide");
            }
            Ok(estimate) => {
                if let (true, Some(rows)) = (c.unqualified, estimate) {
                    v.warning(
                        PgCode::EveryRow,
                        stmt.range,
                        format!("{} has no WHERE: it changes every row (PostgreSQL estimates {rows})", c.id),
                    )
                    .hint("add a WHERE clause unless every row is meant");
                }
                passed.push(c);
            }
        }
    }
    passed
}

/// PostgreSQL's answer for one statement, inside the validation transaction: prepare it (or
/// run it, for DDL), under a savepoint so a failure leaves the transaction usable; the row
/// estimate of an unqualified `UPDATE`/`DELETE`.
async fn ask(client: &tokio_postgres::Transaction<'_>, c: &Checked) -> Result<Option<f64>, PgError> {
    client.batch_execute("SAVEPOINT pilotage_check").await?;
    let result = if c.ddl && c.unparsed.is_some() {
        // Never run what the validator could not read: it is refused anyway.
        Ok(None)
    } else if c.ddl {
        let trimmed = c.pg_sql.trim_end().to_ascii_uppercase();
        let sql = if c.as_query && !trimmed.ends_with(" DATA") {
            format!("{} WITH NO DATA", c.pg_sql)
        } else {
            c.pg_sql.clone()
        };
        client.batch_execute(&sql).await.map(|_| None)
    } else {
        match client.prepare(&c.pg_sql).await {
            Ok(_) if c.unqualified && c.names.is_empty() => Ok(estimate(client, &c.pg_sql).await),
            Ok(_) => Ok(None),
            Err(e) => Err(e),
        }
    };
    match result {
        Ok(v) => {
            client.batch_execute("RELEASE SAVEPOINT pilotage_check").await?;
            Ok(v)
        }
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK TO SAVEPOINT pilotage_check").await;
            Err(e.into())
        }
    }
}

/// `EXPLAIN (FORMAT JSON)`'s estimate of the rows the statement touches (never ANALYZE).
async fn estimate(client: &tokio_postgres::Transaction<'_>, sql: &str) -> Option<f64> {
    let rows = client.simple_query(&format!("EXPLAIN (FORMAT JSON) {sql}")).await.ok()?;
    let text = rows.into_iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
        _ => None,
    })?;
    let plan: Json = serde_json::from_str(&text).ok()?;
    let top = &plan[0]["Plan"];
    // ModifyTable's own estimate is 0 rows: the rows it modifies are its input's.
    top["Plans"][0]["Plan Rows"].as_f64().or_else(|| top["Plan Rows"].as_f64())
}

/// PostgreSQL's error for one statement as a diagnostic: the SQLSTATE's code, at the token of
/// its position (else at the relation it names, else over the statement).
fn report(src: &Source<'_>, stmt: &Statement, c: &Checked, e: &PgError, v: &mut Validation<PgCode, PgRisk>) {
    let at = e
        .position
        .and_then(|p| c.byte_of(p))
        .map(|b| {
            stmt.token_covering(src, b).map(token_range).unwrap_or_else(|| {
                let l = src.location_of(b);
                range(l, Location { line: l.line, column: l.column + 1 })
            })
        })
        .or_else(|| {
            c.spans
                .iter()
                .find(|(n, _)| {
                    e.message.contains(&format!("\"{n}\"")) || e.message.ends_with(&format!(" {n}"))
                })
                .map(|(_, s)| span_range(*s))
        })
        .unwrap_or(stmt.range);
    let code = match e.code.as_str() {
        "42601" => Some(PgCode::SyntaxError),
        "42P01" => Some(PgCode::UnknownTable),
        "42703" => Some(PgCode::UnknownColumn),
        "42702" | "42725" => Some(PgCode::AmbiguousColumn),
        "42883" => Some(PgCode::UnknownFunction),
        "42501" => Some(PgCode::PermissionDenied),
        "42804" | "42846" | "22P02" | "22003" | "22007" | "22008" | "42P18" => Some(PgCode::TypeMismatch),
        "55000" | "42809" => Some(PgCode::NotWritable),
        "42P07" | "42710" => Some(PgCode::AlreadyExists),
        _ => None,
    };
    let message = format!("PostgreSQL ({}): {}", e.code, e.message);
    let d = match code {
        Some(code) => v.error(code, at, message),
        None => v.constraint(at, message),
    };
    if let Some(h) = e.hint.as_ref().or(e.detail.as_ref()) {
        d.hint(h.clone());
    }
}

impl Checked {
    /// The program byte of PostgreSQL's 1-based character `position` in `pg_sql`.
    fn byte_of(&self, position: usize) -> Option<usize> {
        let p = position.checked_sub(1)?;
        let mut delta: isize = 0;
        let mut original = None;
        for &(at, pg_len, len) in &self.shifts {
            if p >= at + pg_len {
                delta += len as isize - pg_len as isize;
            } else if p >= at {
                original = Some((at as isize + delta) as usize);
                break;
            } else {
                break;
            }
        }
        let chars = original.unwrap_or((p as isize + delta).max(0) as usize);
        let within = self.sql.char_indices().nth(chars).map(|(b, _)| b).unwrap_or(self.sql.len());
        Some(self.start_byte + within)
    }
}

/// The names a program has created and dropped so far, and the served schema.
struct Names {
    schema: String,
    created: Vec<String>,
    dropped: Vec<String>,
}

/// The first pass over one statement; `None` when it has findings (already reported).
fn analyze(
    src: &Source<'_>,
    stmt: &Statement,
    names: &mut Names,
    v: &mut Validation<PgCode, PgRisk>,
) -> Option<Checked> {
    let words: Vec<(String, &sqlparser::tokenizer::TokenWithSpan)> = stmt
        .tokens
        .iter()
        .filter(|t| text::significant(t))
        .take(2)
        .map(|t| match &t.token {
            Token::Word(w) if w.quote_style.is_none() => (w.value.to_uppercase(), t),
            _ => (String::new(), t),
        })
        .collect();
    let (first, first_token) = (&words[0].0, words[0].1);
    let next = words.get(1).map(|w| w.0.as_str()).unwrap_or_default();
    if let Some((why, hint)) = forbidden_word(first, next) {
        let what = if matches!(first.as_str(), "CREATE" | "ALTER" | "DROP") {
            format!("{first} {next}")
        } else {
            first.clone()
        };
        v.error(
            PgCode::ForbiddenStatement,
            token_range(first_token),
            format!("{what} statements are outside sql/postgres: {why}"),
        )
        .hint(hint);
        return None;
    }
    let mut ok = true;
    for b in &stmt.bad_placeholders {
        v.error(PgCode::BadPlaceholder, b.range, b.message()).hint(BadPlaceholder::HINT);
        ok = false;
    }
    let (pg_sql, param_names, shifts) = rewrite(src, stmt);
    let mut checked = Checked {
        id: stmt.id.clone(),
        sql: stmt.sql.clone(),
        pg_sql,
        names: param_names,
        ddl: false,
        as_query: false,
        unqualified: false,
        risk: PgRisk::Safe,
        refs: Vec::new(),
        shifts,
        unparsed: None,
        start_byte: stmt.start_byte,
        spans: Vec::new(),
    };
    let ast = match parse(stmt) {
        Ok(ast) => ast,
        Err(Some(unparsed)) => {
            // Only statements whose first words are in the Language get here; PostgreSQL's
            // error, if it has one, is the better diagnostic.
            checked.unparsed = Some(unparsed);
            checked.ddl = matches!(first.as_str(), "CREATE" | "ALTER" | "DROP");
            return ok.then_some(checked);
        }
        Err(None) => {
            v.bound_exceeded("the statement nests deeper than the validator's parser bound (50 levels)");
            return None;
        }
    };
    let Some(shape) = classify(&ast) else {
        v.error(PgCode::ForbiddenStatement, token_range(first_token), format!("{first} statements are outside sql/postgres"))
            .hint("programs are SELECT, INSERT, UPDATE and DELETE statements, plus the DDL of the sql-pg-core guide");
        return None;
    };
    let mut found = Found::default();
    let _ = ast.visit(&mut found);
    ok &= refuse_forbidden_parts(&found, v);
    let relations = accesses(&found, &shape);
    let mut refs: Vec<Ref> = Vec::new();
    ok &= relation_refs(relations, &found, names, &mut checked.spans, &mut refs, v);
    function_refs(&found, v, &mut refs, &mut checked.spans);
    if !ok {
        return None;
    }
    if let Some(new) = &shape.created {
        names.created.push(new.clone());
    }
    for d in &shape.drops {
        if let Some(n) = d.0.last().map(folded) {
            names.dropped.push(n);
        }
    }
    let kind_risk = shape.targets.iter().chain(&found.writes).map(|(_, a)| a.risk()).chain([shape.risk]);
    checked.risk = refs.iter().map(|r| r.risk).chain(kind_risk).max().unwrap_or(PgRisk::Safe);
    checked.ddl = shape.ddl;
    checked.as_query = matches!(&ast, Ast::CreateTable(t) if t.query.is_some());
    checked.unqualified = found.writes.iter().chain(&shape.targets).any(|(_, a)| *a == Access::UpdateAll)
        || found.unqualified_delete;
    checked.refs = refs;
    Some(checked)
}

/// The parts of a parsed statement outside the Language: `SELECT ... INTO`, functions of the
/// deny-list. Returns whether there are none.
fn refuse_forbidden_parts(found: &Found, v: &mut Validation<PgCode, PgRisk>) -> bool {
    let mut ok = true;
    if let Some(span) = found.select_into {
        v.error(
            PgCode::ForbiddenStatement,
            span_range(span),
            "SELECT INTO creates a table: outside sql/postgres",
        )
        .hint("write CREATE TABLE ... AS SELECT ...");
        ok = false;
    }
    for (span, name) in &found.functions {
        if denied_function(name) {
            v.error(PgCode::ForbiddenStatement, span_range(*span), format!("function {name}() is outside sql/postgres"))
                .hint("functions reaching files, other sessions, settings or SQL in strings are refused; see the sql-pg-closed-sets guide");
            ok = false;
        }
    }
    ok
}

/// Every relation the statement names (new names excluded, dropped names included) with how
/// it is used, in text order.
fn accesses(found: &Found, shape: &Shape) -> Vec<(ObjectName, Access)> {
    let mut relations: Vec<(ObjectName, Access)> = Vec::new();
    for r in &found.relations {
        if shape.new_name.is_some_and(|s| s == r.span()) {
            continue;
        }
        let access = found
            .writes
            .iter()
            .chain(&shape.targets)
            .find(|(s, _)| *s == r.span())
            .map(|(_, a)| *a)
            .unwrap_or(Access::Read);
        relations.push((r.clone(), access));
    }
    for (s, a) in &shape.targets {
        if let Some(n) = shape.drops.iter().find(|n| n.span() == *s) {
            relations.push((n.clone(), *a));
        }
    }
    relations.sort_by_key(|(n, _)| (n.span().start.line, n.span().start.column));
    relations
}

/// Resolve each relation (CTEs and names this program created skipped), adding its reference
/// and its span; returns whether all resolved.
fn relation_refs(
    relations: Vec<(ObjectName, Access)>,
    found: &Found,
    names: &Names,
    spans: &mut Vec<(String, Span)>,
    refs: &mut Vec<Ref>,
    v: &mut Validation<PgCode, PgRisk>,
) -> bool {
    let mut ok = true;
    for (name, access) in relations {
        let span = name.span();
        let parts: Vec<String> = name.0.iter().map(folded).collect();
        let Some(relation) = parts.last().cloned() else { continue };
        if parts.len() > 1 && parts[parts.len() - 2] != names.schema {
            v.error(
                PgCode::UnknownTable,
                span_range(span),
                format!("`{}`: only schema `{}` is served", parts.join("."), names.schema),
            )
            .hint(format!("write `{relation}`"));
            ok = false;
            continue;
        }
        if parts.len() == 1 && found.ctes.contains(&relation) {
            continue;
        }
        spans.push((relation.clone(), span));
        if names.dropped.contains(&relation) {
            v.error(
                PgCode::UnknownTable,
                span_range(span),
                format!("`{relation}` is dropped by an earlier statement of this program"),
            )
            .hint("reorder the statements, or do not drop it");
            ok = false;
            continue;
        }
        if names.created.contains(&relation) {
            continue;
        }
        ok &= resolve(&relation, access, span, v, refs);
    }
    ok
}

/// A reference for each catalog function the statement calls.
fn function_refs(
    found: &Found,
    v: &Validation<PgCode, PgRisk>,
    refs: &mut Vec<Ref>,
    spans: &mut Vec<(String, Span)>,
) {
    for (span, name) in &found.functions {
        let entry = v
            .catalog()
            .and_then(|s| s.entries().iter().find(|e| e.kind == "function" && e.name == *name).cloned());
        if let Some(e) = entry {
            let risk = if e.risk == "write" { PgRisk::Write } else { PgRisk::Safe };
            if !refs.iter().any(|r| r.entry == e.id) {
                refs.push(Ref { entry: e.id.clone(), access: Access::Call, risk });
            }
            spans.push((name.clone(), *span));
        }
    }
}

/// Resolve one relation against the caller's catalog: it exists for the caller, PostgreSQL
/// can write through it when written, and the caller's role holds the privilege the access
/// needs. Adds (or raises) its reference; returns whether all is well.
fn resolve(
    name: &str,
    access: Access,
    span: Span,
    v: &mut Validation<PgCode, PgRisk>,
    refs: &mut Vec<Ref>,
) -> bool {
    let entry = v.catalog().and_then(|s| s.get(name)).filter(|e| e.kind != "function").cloned();
    let Some(entry) = entry else {
        let hint = v.catalog().and_then(|s| {
            closest(name, s.entries().iter().filter(|e| e.kind != "function").map(|e| e.id.as_str()))
                .map(|c| format!("close match: {c}"))
        });
        v.error(PgCode::UnknownTable, span_range(span), format!("no table or view `{name}` in your catalog"))
            .hint(hint.unwrap_or_else(|| "list the tables and views with pilotage_catalog".to_owned()));
        return false;
    };
    let writes = !matches!(access, Access::Read | Access::Call);
    if entry.kind == "view" && writes && !entry.tags.iter().any(|t| t == "updatable") {
        v.error(
            PgCode::NotWritable,
            span_range(span),
            format!("`{name}` is a view PostgreSQL cannot write through"),
        )
        .hint("write to the underlying tables instead");
        return false;
    }
    if let Some(p) = access.privilege() {
        if !entry.tags.iter().any(|t| t == p) {
            let granted: Vec<String> = entry
                .tags
                .iter()
                .filter(|t| ["select", "insert", "update", "delete"].contains(&t.as_str()))
                .map(|t| t.to_uppercase())
                .collect();
            v.error(
                PgCode::PermissionDenied,
                span_range(span),
                format!("your role may {} `{name}`, not {}", granted.join(", "), p.to_uppercase()),
            )
            .hint("ask the database administrator for the grant, or leave the statement out");
            return false;
        }
    }
    match refs.iter_mut().find(|r| r.entry == entry.id) {
        Some(r) if access > r.access => {
            r.access = access;
            r.risk = access.risk();
        }
        Some(_) => {}
        None => refs.push(Ref { entry: entry.id.clone(), access, risk: access.risk() }),
    }
    true
}

/// The statement with `:name` placeholders as `$k`: the text, the names (`$1` first) and the
/// character shifts.
fn rewrite(src: &Source<'_>, stmt: &Statement) -> (String, Vec<String>, Vec<(usize, usize, usize)>) {
    let mut names: Vec<String> = Vec::new();
    let mut out = String::new();
    let mut shifts = Vec::new();
    let mut from = 0;
    for p in &stmt.placeholders {
        let start = src.byte_at(p.span.start).saturating_sub(stmt.start_byte).min(stmt.sql.len());
        let end = src.byte_at(p.span.end).saturating_sub(stmt.start_byte).min(stmt.sql.len());
        if start < from {
            continue;
        }
        out.push_str(&stmt.sql[from..start]);
        let k = match names.iter().position(|n| *n == p.name) {
            Some(i) => i + 1,
            None => {
                names.push(p.name.clone());
                names.len()
            }
        };
        let dollar = format!("${k}");
        shifts.push((out.chars().count(), dollar.len(), stmt.sql[start..end].chars().count()));
        out.push_str(&dollar);
        from = end;
    }
    out.push_str(&stmt.sql[from..]);
    (out, names, shifts)
}

/// Parse one statement (PostgreSQL dialect). `Err(Some(..))`: not parsed, with sqlparser's
/// message and location; `Err(None)`: nested past the parser's bound.
fn parse(stmt: &Statement) -> Result<Ast, Option<(String, Option<Location>)>> {
    let tokens = stmt.tokens.clone();
    let parsed = std::panic::catch_unwind(move || {
        let mut parser = Parser::new(&PostgreSqlDialect {}).with_tokens_with_locations(tokens);
        let ast = parser.parse_statement()?;
        Ok::<_, ParserError>((ast, parser.peek_token()))
    });
    match parsed {
        Err(_) => Err(Some(("the statement could not be parsed".to_owned(), None))),
        Ok(Err(ParserError::RecursionLimitExceeded)) => Err(None),
        Ok(Err(ParserError::ParserError(s) | ParserError::TokenizerError(s))) => {
            Err(Some(text::split_location(&s.replace("found: EOF", "found: the end of the statement"))))
        }
        Ok(Ok((_, next))) if next.token != Token::EOF => Err(Some((
            format!("unexpected `{}` after the end of the statement", next.token),
            Some(next.span.start),
        ))),
        Ok(Ok((ast, _))) => Ok(ast),
    }
}

/// A statement's kind: its write targets, names it creates and drops, its own risk.
#[derive(Default)]
struct Shape {
    targets: Vec<(Span, Access)>,
    new_name: Option<Span>,
    created: Option<String>,
    drops: Vec<ObjectName>,
    ddl: bool,
    risk: PgRisk,
}

/// The statement's shape, or `None` for a kind outside the Language. DML targets are found
/// by the visitor (they may sit in `WITH`).
fn classify(ast: &Ast) -> Option<Shape> {
    let ddl = |risk| Shape { ddl: true, risk, ..Shape::default() };
    Some(match ast {
        Ast::Query(_) | Ast::Insert(_) | Ast::Update(_) | Ast::Delete(_) => Shape::default(),
        Ast::CreateTable(t) => Shape {
            new_name: Some(t.name.span()),
            created: t.name.0.last().map(folded),
            ..ddl(PgRisk::Write)
        },
        Ast::CreateView(c) => Shape {
            new_name: Some(c.name.span()),
            created: c.name.0.last().map(folded),
            ..ddl(PgRisk::Write)
        },
        Ast::CreateIndex(i) => {
            Shape { targets: vec![(i.table_name.span(), Access::Create)], ..ddl(PgRisk::Write) }
        }
        Ast::AlterTable(a) => {
            Shape { targets: vec![(a.name.span(), Access::Alter)], ..ddl(PgRisk::Destructive) }
        }
        Ast::Truncate(t) => Shape {
            targets: t.table_names.iter().map(|n| (n.name.span(), Access::Truncate)).collect(),
            ..ddl(PgRisk::Destructive)
        },
        Ast::Drop { object_type: ObjectType::Table | ObjectType::View, names, .. } => Shape {
            targets: names.iter().map(|n| (n.span(), Access::Drop)).collect(),
            drops: names.clone(),
            ..ddl(PgRisk::Destructive)
        },
        Ast::Drop { object_type: ObjectType::Index, .. } => ddl(PgRisk::Destructive),
        _ => return None,
    })
}

/// Relations, CTE names, function calls and DML targets of one statement.
#[derive(Default)]
struct Found {
    relations: Vec<ObjectName>,
    ctes: Vec<String>,
    functions: Vec<(Span, String)>,
    writes: Vec<(Span, Access)>,
    unqualified_delete: bool,
    select_into: Option<Span>,
}

/// Whether a `WHERE` clause is missing or always true (`WHERE true`, `WHERE 1 = 1`).
fn every_row(selection: Option<&Expr>) -> bool {
    match selection {
        None => true,
        Some(Expr::Value(v)) => matches!(v.value, Value::Boolean(true)),
        Some(Expr::Nested(e)) => every_row(Some(e)),
        Some(Expr::BinaryOp { left, op: sqlparser::ast::BinaryOperator::Eq, right }) => {
            matches!((&**left, &**right), (Expr::Value(a), Expr::Value(b)) if a.value == b.value)
        }
        Some(_) => false,
    }
}

impl Visitor for Found {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            self.ctes.extend(with.cte_tables.iter().map(|c| c.alias.name.value.to_lowercase()));
        }
        if let SetExpr::Select(s) = &*query.body {
            if s.into.is_some() {
                self.select_into = Some(s.span());
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_statement(&mut self, statement: &Ast) -> ControlFlow<()> {
        match statement {
            Ast::Insert(i) => {
                if let TableObject::TableName(n) = &i.table {
                    self.writes.push((n.span(), Access::Insert));
                }
            }
            Ast::Update(u) => {
                if let TableFactor::Table { name, .. } = &u.table.relation {
                    let access =
                        if every_row(u.selection.as_ref()) { Access::UpdateAll } else { Access::Update };
                    self.writes.push((name.span(), access));
                }
            }
            Ast::Delete(d) => {
                let from = match &d.from {
                    FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
                };
                for t in from {
                    if let TableFactor::Table { name, .. } = &t.relation {
                        self.writes.push((name.span(), Access::Delete));
                    }
                }
                self.unqualified_delete |= every_row(d.selection.as_ref());
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
        if !self.relations.iter().any(|r| r.span() == relation.span()) {
            self.relations.push(relation.clone());
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = expr {
            if let Some(last) = f.name.0.last() {
                self.functions.push((f.name.span(), folded(last)));
            }
        }
        ControlFlow::Continue(())
    }
}
