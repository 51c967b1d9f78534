//! Validation and the plan.
//!
//! Two passes. First, per statement and without the database: the leading keyword (statements
//! outside the Language are `forbidden_statement`), placeholders, the parse (sqlparser,
//! PostgreSQL dialect), the statement kind, functions against the deny-list, and every
//! relation against the caller's catalog snapshot (unknown names, views PostgreSQL cannot
//! write through, privileges the caller's role lacks). Second, PostgreSQL itself, in one
//! transaction as the caller's role that is always rolled back: each statement is prepared
//! (DDL of the allow-list is run, so later statements see its effect), and every `UPDATE` or
//! `DELETE` without placeholders is explained (never analyzed): when its estimated rows reach
//! its table's, whatever its `WHERE` says, it is `destructive` with an `every_row` warning.
//! PostgreSQL's SQLSTATE becomes a closed diagnostic code at the text range of its error
//! position. A caller whose role is refused (no role, a role the login cannot assume, a
//! superuser) gets `permission_denied` over the whole program, before anything else.

use std::sync::Arc;
use std::time::Duration;

use pilotage::engine::catalog::edit_distance;
use pilotage::prelude::*;
use sqlparser::ast::{ObjectName, ObjectNamePart, Spanned, Statement as Ast, Visit};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Location, Span, Token};

use super::db::{Db, PgError};
use super::session::Session;
use super::text::{self, range, token_range, BadPlaceholder, Source, Statement};
use super::{PgCode, PgRisk};

mod ask;
mod rules;
mod shape;

use rules::forbidden_word;
pub use rules::{denied_function, Access};
use shape::{classify, parse, Found, Shape};

/// How long PostgreSQL may take over one validation's statements.
pub const VALIDATE_TIMEOUT: Duration = Duration::from_secs(3);

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
    /// A query (`SELECT`, `VALUES`, `TABLE`, `WITH` without a data-modifying part): its rows
    /// may be bounded by wrapping it in a `LIMIT`, which stops PostgreSQL at the bound.
    pub query: bool,
    /// `CREATE TABLE ... AS`: validation runs it `WITH NO DATA`, so its query (and any
    /// function it calls) never executes before the run.
    as_query: bool,
    /// `UPDATE` or `DELETE` without `WHERE`: it changes every row.
    pub unqualified: bool,
    /// The table an `UPDATE` or `DELETE` without placeholders changes: validation compares
    /// the statement's estimated rows with the table's.
    estimated: Option<String>,
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
    let Some((src, role, first)) = first_pass(db, program, v) else { return Vec::new() };
    if first.is_empty() || v.is_cancelled() {
        return Vec::new();
    }
    second_pass(db, &src, role, first, v)
}

/// The first pass only: what a run needs of a program the runtime admitted (validated
/// against the caller's current catalog version; PostgreSQL prepares each statement again as
/// it runs).
pub fn analyzed(db: &Arc<Db>, program: &Json, v: &mut Validation<PgCode, PgRisk>) -> Vec<Checked> {
    first_pass(db, program, v)
        .map(|(_, _, first)| first.into_iter().map(|(_, c)| c).collect())
        .unwrap_or_default()
}

/// The first pass: the caller's role (refused callers get `permission_denied`) and each
/// statement that passed; `None` when there is nothing to check further.
#[allow(clippy::type_complexity)]
fn first_pass<'p>(
    db: &Arc<Db>,
    program: &'p Json,
    v: &mut Validation<PgCode, PgRisk>,
) -> Option<(Source<'p>, Option<String>, Vec<(Statement, Checked)>)> {
    let (src, statements) = match text::statements(program, &PostgreSqlDialect {}) {
        Ok(found) => found,
        Err(e) => {
            let code = if e.malformed { PgCode::MalformedProgram } else { PgCode::SyntaxError };
            let d = v.error(code, e.range, e.message);
            if let Some(h) = e.hint {
                d.hint(h);
            }
            return None;
        }
    };
    let role = match db.roles.of(v.caller()) {
        Ok(role) => role,
        Err(e) => {
            v.error(PgCode::PermissionDenied, src.whole(), e.message)
                .hint("the server's operator maps callers to database roles (--role-claim, --default-role)");
            return None;
        }
    };
    // The catalog read just before, as this role, was refused: say why, not `unknown_table`.
    if let Some(e) = db.refusal(role.as_deref()) {
        v.error(PgCode::PermissionDenied, src.whole(), e.message)
            .hint("ask the database administrator to GRANT the role to the server's login, or the server's operator to map you to another role");
        return None;
    }
    let mut names = Names { schema: db.schema.clone(), created: Vec::new(), dropped: Vec::new() };
    let first: Vec<(Statement, Checked)> = statements
        .into_iter()
        .filter_map(|stmt| {
            let c = analyze(&src, &stmt, &mut names, v)?;
            Some((stmt, c))
        })
        .collect();
    Some((src, role, first))
}

/// The second pass: PostgreSQL's own check of the statements of the first, as the caller's
/// role; the statements that passed.
fn second_pass(
    db: &Arc<Db>,
    src: &Source<'_>,
    role: Option<String>,
    first: Vec<(Statement, Checked)>,
    v: &mut Validation<PgCode, PgRisk>,
) -> Vec<Checked> {
    // A program that changes the schema prepares against what it created: never cached.
    let cacheable = first.iter().all(|(_, c)| !c.ddl);
    // What PostgreSQL already accepted as this role at the catalog stamp this request's snapshot
    // was read at is its answer still (no estimate: those follow the table's statistics).
    let stamp = v.snapshot().and_then(|s| db.stamp_of(role.as_deref(), &s)).filter(|_| cacheable);
    let known = |c: &Checked| {
        c.estimated.is_none() && stamp.as_ref().is_some_and(|s| db.accepted(role.as_deref(), s, &c.pg_sql))
    };
    let work: Vec<(usize, Checked)> =
        first.iter().enumerate().filter(|(_, (_, c))| !known(c)).map(|(i, (_, c))| (i, c.clone())).collect();
    let asked: Vec<usize> = work.iter().map(|(i, _)| *i).collect();
    let (shared, schema, who) = (db.clone(), db.schema.clone(), role.clone());
    let (answers, waited) = if work.is_empty() {
        (Ok(Vec::new()), std::time::Duration::ZERO)
    } else {
        db.block_waiting(move |client| async move {
            let mut session = Session::new(shared, client);
            let (tx, prologue) = session.start(who.as_deref(), VALIDATE_TIMEOUT, false).await?;
            let mut answers = Vec::new();
            let mut rest = work.iter();
            if let Some((_, c)) = rest.next() {
                // The prologue and the first statement go out together.
                let (began, answer) =
                    tokio::join!(prologue.check(tx.client()), ask::ask(&tx, &schema, c, cacheable));
                // Refused, the prologue ended the session: the dropped transaction rolls back.
                began?;
                answers.push(answer);
            }
            for (_, c) in rest {
                answers.push(ask::ask(&tx, &schema, c, cacheable).await);
            }
            // Dropped, the transaction queues its ROLLBACK ahead of the connection's next use.
            drop(tx);
            session.ended();
            Ok(answers)
        })
    };
    // Waiting for a connection is not the validation's time: the caller sees it as queue time.
    v.waited(waited);
    let answers = match answers {
        Ok(a) => a,
        Err(e) => {
            let code = if e.code == "42501" { PgCode::PermissionDenied } else { PgCode::Unavailable };
            v.error(code, src.whole(), format!("PostgreSQL could not check the program: {e}"));
            return Vec::new();
        }
    };
    let mut by_statement: Vec<Option<Result<Option<ask::Estimate>, PgError>>> = vec![None; first.len()];
    for (i, answer) in asked.into_iter().zip(answers) {
        by_statement[i] = Some(answer);
    }
    let mut passed = Vec::new();
    for ((stmt, mut c), answer) in first.into_iter().zip(by_statement) {
        let asked = answer.is_some();
        // Not asked: PostgreSQL accepted it as this role at this stamp.
        let answer = answer.unwrap_or(Ok(None));
        if let (true, Ok(None), Some(s)) = (asked && cacheable && c.estimated.is_none(), &answer, &stamp) {
            db.accept(role.as_deref(), s, &c.pg_sql);
        }
        match answer {
            Err(e) => ask::report(src, &stmt, &c, &e, v),
            Ok(_) if c.unparsed.is_some() => {
                let (message, at) = c.unparsed.clone().unwrap_or_default();
                let where_ = at.and_then(|l| stmt.token_at(l)).map(token_range).unwrap_or(stmt.range);
                v.error(PgCode::SyntaxError, where_, format!("outside the Language's grammar: {message}"))
                    .hint("PostgreSQL accepts it, but the validator cannot read it: rewrite it in the forms of the sql-pg-core guide");
            }
            Ok(estimate) => {
                let reaches = estimate.filter(|e| e.table >= 1.0 && e.rows >= e.table);
                let message = match (c.unqualified, estimate, reaches) {
                    (true, Some(e), _) => Some(format!(
                        "{} has no WHERE: it changes every row (PostgreSQL estimates {})",
                        c.id, e.rows
                    )),
                    (true, None, _) => Some(format!("{} has no WHERE: it changes every row", c.id)),
                    (false, _, Some(e)) => Some(format!(
                        "{}'s WHERE matches every row: PostgreSQL estimates {} of the table's {} rows",
                        c.id, e.rows, e.table
                    )),
                    (false, _, None) => None,
                };
                if let Some(message) = message {
                    v.warning(PgCode::EveryRow, stmt.range, message)
                        .hint("add a WHERE clause that selects the rows meant, unless every row is meant");
                    c.everything();
                }
                passed.push(c);
            }
        }
    }
    passed
}

impl Checked {
    /// The statement changes every row of its table: `destructive`, as is its reference.
    fn everything(&mut self) {
        self.risk = self.risk.join(PgRisk::Destructive);
        for r in &mut self.refs {
            if r.access == Access::Update {
                r.access = Access::UpdateAll;
            }
            if matches!(r.access, Access::UpdateAll | Access::Delete) {
                r.risk = r.risk.join(PgRisk::Destructive);
            }
        }
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
        query: false,
        as_query: false,
        unqualified: false,
        estimated: None,
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
    let writes = found.functions.iter().any(|(_, name)| rules::writing_function(name));
    let call_risk = if writes { PgRisk::Write } else { PgRisk::Safe };
    checked.risk = refs.iter().map(|r| r.risk).chain(kind_risk).fold(call_risk, PgRisk::join);
    if checked.names.is_empty() && !shape.ddl {
        checked.estimated = refs
            .iter()
            .find(|r| matches!(r.access, Access::Update | Access::UpdateAll | Access::Delete))
            .map(|r| r.entry.clone());
    }
    checked.ddl = shape.ddl;
    checked.query = matches!(&ast, Ast::Query(_)) && found.writes.is_empty() && found.select_into.is_none();
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
            .unwrap_or(if found.locks { Access::Lock } else { Access::Read });
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
        let Some(overloads) = v.catalog().map(|s| {
            s.entries().iter().filter(|e| e.kind == "function" && e.name == *name).collect::<Vec<_>>()
        }) else {
            continue;
        };
        let Some(first) = overloads.first() else { continue };
        // Which overload PostgreSQL picks is its own: the call risks what the riskiest may do.
        let risk = overloads.iter().map(|e| PgRisk::from_wire(&e.risk)).fold(PgRisk::Safe, PgRisk::join);
        match refs.iter_mut().find(|r| r.entry == first.id) {
            Some(r) => r.risk = r.risk.join(risk),
            None => refs.push(Ref { entry: first.id.clone(), access: Access::Call, risk }),
        }
        spans.push((name.clone(), *span));
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
            r.risk = r.risk.join(access.risk());
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
