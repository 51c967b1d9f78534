//! Validation and the plan.
//!
//! Per statement, in order: the statement kind (anything but SELECT, INSERT, UPDATE, DELETE
//! and DROP TABLE is `forbidden_statement`), placeholders, the parse (sqlparser, SQLite
//! dialect), table and view names against the caller's catalog snapshot, functions against the
//! Language's list, INSERT/UPDATE columns and literal types, and finally SQLite's own
//! `prepare` (compiling, never running) under the Language's authorizer, whose errors are
//! classified (`constraint` when no code fits). A statement with a finding is not prepared.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use pilotage::engine::catalog::edit_distance;
use pilotage::engine::Signal;
use pilotage::prelude::*;
use sqlparser::ast::Spanned;
use sqlparser::ast::{
    AssignmentTarget, Expr, FromTable, ObjectName, ObjectNamePart, ObjectType, Query, SetExpr,
    SqliteOnConflict, Statement as Ast, TableFactor, TableObject, Value, ValueWithSpan, Visit, Visitor,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Span, Token};

use super::db::{ColType, Column, Db, Table, FUNCTIONS};
use super::text::{self, range, token_range, BadPlaceholder, Source, Statement};
use super::{SqlCode, SqlRisk};

/// How a statement uses a table or view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    Read,
    Insert,
    Update,
    Delete,
    Drop,
}

/// One reference sub-step: the entry, how it is used and the risk of that use.
#[derive(Clone, Debug)]
pub struct Ref {
    pub entry: String,
    pub access: Access,
    pub risk: SqlRisk,
}

/// What validation learned about one valid statement.
#[derive(Clone, Debug)]
pub struct Analysis {
    pub risk: SqlRisk,
    pub refs: Vec<Ref>,
    /// DROP TABLE: the schema changes.
    pub drops: bool,
}

/// Leading keywords of statements outside the Language, with the reason and a hint.
fn forbidden_keyword(k: Keyword) -> Option<(&'static str, &'static str)> {
    let attach = ("programs work on this session's database only", "query the tables of the catalog instead");
    let schema = (
        "schema definition is an administrator's task, not a program's",
        "programs read and change rows (SELECT, INSERT, UPDATE, DELETE) and may DROP TABLE",
    );
    let tx = ("every run already is one transaction", "remove the transaction statement");
    let maintenance = ("database maintenance is outside the Language", "remove the statement");
    Some(match k {
        Keyword::ATTACH | Keyword::DETACH => attach,
        Keyword::PRAGMA => (
            "PRAGMA reads and changes engine settings",
            "table and column facts are in the catalog (pilotage_catalog)",
        ),
        Keyword::CREATE | Keyword::ALTER => schema,
        Keyword::BEGIN
        | Keyword::COMMIT
        | Keyword::END
        | Keyword::ROLLBACK
        | Keyword::SAVEPOINT
        | Keyword::RELEASE => tx,
        Keyword::VACUUM | Keyword::REINDEX | Keyword::ANALYZE => maintenance,
        Keyword::EXPLAIN => {
            ("EXPLAIN output is not part of the Language", "validate_sql returns the plan of a program")
        }
        _ => return None,
    })
}

/// The caller's visible tables and views, by lowercase name.
struct Visible {
    tables: BTreeMap<String, Table>,
}

impl Visible {
    fn new(snapshot: Option<&CatalogSnapshot>, tables: Vec<Table>) -> Self {
        let tables = tables
            .into_iter()
            .filter(|t| snapshot.is_some_and(|s| s.get(&t.name).is_some()))
            .map(|t| (t.name.to_lowercase(), t))
            .collect();
        Visible { tables }
    }

    fn get(&self, name: &str) -> Option<&Table> {
        self.tables.get(&name.to_lowercase())
    }

    /// The closest visible name (edit distance at most 3), for hints.
    fn close_match(&self, name: &str) -> Option<&str> {
        closest(name, self.tables.values().map(|t| t.name.as_str()))
    }
}

/// Close-match lookups one validation makes; later unknown names get the plain hint, so the
/// hints cost a bounded amount of work whatever the program's size.
const MAX_HINT_LOOKUPS: usize = 64;

thread_local! {
    static HINTS_LEFT: std::cell::Cell<usize> = const { std::cell::Cell::new(MAX_HINT_LOOKUPS) };
}

fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let n = name.chars().count();
    if n > 64 || HINTS_LEFT.with(|h| h.get()) == 0 || Signal::current().is_cancelled() {
        return None;
    }
    HINTS_LEFT.with(|h| h.set(h.get() - 1));
    let lower = name.to_lowercase();
    candidates
        .take(4096)
        .filter(|c| c.chars().count().abs_diff(n) <= 3)
        .map(|c| (edit_distance(&lower, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= 3.min(lower.len().max(1)))
        .min()
        .map(|(_, c)| c)
}

fn span_range(s: Span) -> TextRange {
    range(s.start, s.end)
}

/// Validate `program` (see the module documentation) and report the plan of a valid one.
pub fn validate(db: &Mutex<Db>, program: &Json, v: &mut Validation<SqlCode, SqlRisk>) {
    let db = db.lock().unwrap_or_else(|p| p.into_inner());
    let schema = db.schema_version();
    let checked = check(&db, schema, program, v);
    if v.has_errors() || v.is_cancelled() {
        return;
    }
    for (stmt, a) in &checked {
        v.step(stmt.id.clone(), a.risk);
        for (k, r) in a.refs.iter().enumerate() {
            v.step(format!("{}.ref-{}", stmt.id, k + 1), r.risk).calls(r.entry.clone());
        }
    }
    if let Some(schema) = schema {
        db.checks.keep(program, v.catalog(), schema, Arc::new(checked));
    }
}

/// Check every statement of `program` against the database at `schema` (its `schema_version`,
/// just read), reporting findings on `v`; the statements that passed with what was learned
/// about them (all of them when `v` has no error).
pub fn check(
    db: &Db,
    schema: Option<i64>,
    program: &Json,
    v: &mut Validation<SqlCode, SqlRisk>,
) -> Vec<(Statement, Analysis)> {
    let (src, statements) = match text::statements(program, &SQLiteDialect {}) {
        Ok(found) => found,
        Err(e) => {
            let code = if e.malformed { SqlCode::MalformedProgram } else { SqlCode::SyntaxError };
            let d = v.error(code, e.range, e.message);
            if let Some(h) = e.hint {
                d.hint(h);
            }
            return Vec::new();
        }
    };
    let visible = Visible::new(v.catalog(), db.tables_at(schema));
    let mut dropped: Vec<String> = Vec::new();
    let mut checked = Vec::new();
    HINTS_LEFT.with(|h| h.set(MAX_HINT_LOOKUPS));
    for stmt in statements {
        if v.is_cancelled() {
            break;
        }
        if let Some(a) = analyze(&stmt, &visible, &mut dropped, v) {
            if prepare(db, &src, &stmt, &visible, &a, v) {
                checked.push((stmt, a));
            }
        }
    }
    checked
}

/// Parse and resolve one statement; `None` when it has findings (already reported).
fn analyze(
    stmt: &Statement,
    visible: &Visible,
    dropped: &mut Vec<String>,
    v: &mut Validation<SqlCode, SqlRisk>,
) -> Option<Analysis> {
    let first = stmt.first();
    if let Token::Word(w) = &first.token {
        if let Some((why, hint)) = forbidden_keyword(w.keyword) {
            v.error(
                SqlCode::ForbiddenStatement,
                token_range(first),
                format!("{} statements are outside sql/sqlite-3: {why}", w.value.to_uppercase()),
            )
            .hint(hint);
            return None;
        }
    }
    let mut ok = true;
    for b in &stmt.bad_placeholders {
        v.error(SqlCode::BadPlaceholder, b.range, b.message()).hint(BadPlaceholder::HINT);
        ok = false;
    }
    let ast = parse(stmt, v)?;
    let (kind, target) = match classify(&ast) {
        Ok(c) => c,
        Err(what) => {
            v.error(
                SqlCode::ForbiddenStatement,
                token_range(first),
                format!("{what} statements are outside sql/sqlite-3"),
            )
            .hint("programs are SELECT, INSERT, UPDATE, DELETE and DROP TABLE statements");
            return None;
        }
    };

    // Names: relations in text order, CTE names excluded; functions against the list.
    let mut found = Found::default();
    let _ = ast.visit(&mut found);
    if let Ast::Drop { names, .. } = &ast {
        found.relations.extend(names.iter().cloned());
    }
    for (span, name) in &found.functions {
        v.error(
            SqlCode::ForbiddenStatement,
            span_range(*span),
            format!("function {name}() is outside sql/sqlite-3"),
        )
        .hint(match closest(name, FUNCTIONS.iter().copied()) {
            Some(c) => format!("close match: {c}; the closed-sets guide lists every function"),
            None => "the closed-sets guide lists the functions programs may call".to_owned(),
        });
        ok = false;
    }
    let mut relations: Vec<&ObjectName> = found.relations.iter().collect();
    relations.sort_by_key(|n| (n.span().start.line, n.span().start.column));
    let mut refs: Vec<(String, Access, Span)> = Vec::new();
    for name in relations {
        let span = name.span();
        let parts: Vec<&str> = name
            .0
            .iter()
            .map(|p| match p {
                ObjectNamePart::Identifier(i) => i.value.as_str(),
                ObjectNamePart::Function(f) => f.name.value.as_str(),
            })
            .collect();
        let [single] = parts.as_slice() else {
            let last = parts.last().copied().unwrap_or_default();
            v.error(
                SqlCode::UnknownTable,
                span_range(span),
                format!("`{}`: schema-qualified names are outside sql/sqlite-3", parts.join(".")),
            )
            .hint(format!("write `{last}`"));
            ok = false;
            continue;
        };
        let lower = single.to_lowercase();
        if found.ctes.contains(&lower) {
            continue;
        }
        if dropped.contains(&lower) {
            v.error(
                SqlCode::UnknownTable,
                span_range(span),
                format!("`{single}` is dropped by an earlier statement of this program"),
            )
            .hint("reorder the statements, or do not drop the table");
            ok = false;
            continue;
        }
        let Some(table) = visible.get(single) else {
            let d = v.error(
                SqlCode::UnknownTable,
                span_range(span),
                format!("no table or view `{single}` in the catalog"),
            );
            match visible.close_match(single) {
                Some(c) => d.hint(format!("close match: {c}")),
                None => d.hint("list the tables and views with pilotage_catalog"),
            };
            ok = false;
            continue;
        };
        let access = if target.as_ref().is_some_and(|t| t.contains(&span)) { kind } else { Access::Read };
        if table.view && access != Access::Read {
            let what = if access == Access::Drop { "DROP TABLE drops tables, and views" } else { "views" };
            v.error(
                SqlCode::NotWritable,
                span_range(span),
                format!("`{}` is a view: {what} are read-only in sql/sqlite-3", table.name),
            )
            .hint("write to the underlying tables instead");
            ok = false;
            continue;
        }
        match refs.iter_mut().find(|r| r.0 == table.name) {
            Some(r) => r.1 = r.1.max(access),
            None => refs.push((table.name.clone(), access, span)),
        }
    }
    ok &= check_columns(&ast, visible, v);
    if !ok {
        return None;
    }

    let unqualified = match &ast {
        Ast::Update(u) => u.selection.is_none(),
        Ast::Query(q) => matches!(&*q.body, SetExpr::Update(Ast::Update(u)) if u.selection.is_none()),
        _ => false,
    };
    let replaces = match &ast {
        Ast::Insert(i) => i.replace_into || i.or == Some(SqliteOnConflict::Replace),
        _ => false,
    };
    let risk_of = |a: Access| match a {
        Access::Read => SqlRisk::Safe,
        Access::Insert if replaces => SqlRisk::Destructive,
        Access::Insert => SqlRisk::Write,
        Access::Update if unqualified => SqlRisk::Destructive,
        Access::Update => SqlRisk::Write,
        Access::Delete | Access::Drop => SqlRisk::Destructive,
    };
    let refs: Vec<Ref> =
        refs.into_iter().map(|(entry, access, _)| Ref { entry, access, risk: risk_of(access) }).collect();
    let risk = refs.iter().map(|r| r.risk).chain([risk_of(kind)]).max().unwrap_or(SqlRisk::Safe);
    if kind == Access::Drop {
        dropped.extend(refs.iter().filter(|r| r.access == Access::Drop).map(|r| r.entry.to_lowercase()));
    }
    Some(Analysis { risk, refs, drops: kind == Access::Drop })
}

/// Parse one statement; syntax errors are reported at the offending token.
fn parse(stmt: &Statement, v: &mut Validation<SqlCode, SqlRisk>) -> Option<Ast> {
    let tokens = stmt.tokens.clone();
    // sqlparser's SQLite dialect can panic on some malformed input (`a MATCH )`): a panic is
    // a syntax error too.
    let parsed = std::panic::catch_unwind(move || {
        let dialect = SQLiteDialect {};
        let mut parser = Parser::new(&dialect).with_tokens_with_locations(tokens);
        let ast = parser.parse_statement()?;
        Ok::<_, ParserError>((ast, parser.peek_token()))
    });
    match parsed {
        Err(_) => {
            v.error(SqlCode::SyntaxError, stmt.range, "the statement could not be parsed");
            None
        }
        Ok(Err(ParserError::RecursionLimitExceeded)) => {
            // Valid SQL the parser will not nest into: a validation resource bound (Part II
            // §10.1), not a finding about the program.
            v.bound_exceeded("the statement nests deeper than the validator's parser bound (50 levels)");
            None
        }
        Ok(Err(e)) => {
            let raw = match e {
                ParserError::ParserError(s) | ParserError::TokenizerError(s) => s,
                ParserError::RecursionLimitExceeded => "the statement nests too deeply".to_owned(),
            };
            let (message, at) = text::split_location(&raw);
            let message = message.replace("found: EOF", "found: the end of the statement");
            let where_ = match at {
                Some(loc) => match stmt.token_at(loc) {
                    Some(t) => token_range(t),
                    None => range(loc, Location { line: loc.line, column: loc.column + 1 }),
                },
                None => token_range(stmt.last()),
            };
            v.error(SqlCode::SyntaxError, where_, message);
            None
        }
        Ok(Ok((_, next))) if next.token != Token::EOF => {
            v.error(
                SqlCode::SyntaxError,
                token_range(&next),
                format!("unexpected `{}` after the end of the statement", next.token),
            )
            .hint("separate statements with `;`");
            None
        }
        Ok(Ok((ast, _))) => Some(ast),
    }
}

/// The statement's kind as an access, and the spans of its write targets; `Err` names a
/// statement kind outside the Language.
fn classify(ast: &Ast) -> Result<(Access, Option<Vec<Span>>), String> {
    fn table_span(f: &TableFactor) -> Option<Span> {
        match f {
            TableFactor::Table { name, .. } => Some(name.span()),
            _ => None,
        }
    }
    match ast {
        Ast::Query(q) => match &*q.body {
            SetExpr::Insert(inner) | SetExpr::Update(inner) | SetExpr::Delete(inner) => classify(inner),
            SetExpr::Merge(_) => Err("MERGE".to_owned()),
            _ => Ok((Access::Read, None)),
        },
        Ast::Insert(i) => match &i.table {
            TableObject::TableName(n) => Ok((Access::Insert, Some(vec![n.span()]))),
            _ => Err("INSERT INTO a function".to_owned()),
        },
        Ast::Update(u) => Ok((Access::Update, table_span(&u.table.relation).map(|s| vec![s]))),
        Ast::Delete(d) => {
            let from = match &d.from {
                FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
            };
            Ok((Access::Delete, Some(from.iter().filter_map(|t| table_span(&t.relation)).collect())))
        }
        Ast::Drop { object_type: ObjectType::Table, names, .. } => {
            Ok((Access::Drop, Some(names.iter().map(Spanned::span).collect())))
        }
        Ast::Drop { object_type, .. } => Err(format!("DROP {object_type}")),
        other => {
            let text = other.to_string();
            let head: Vec<&str> = text.split_whitespace().take(2).collect();
            Err(head.join(" ").to_uppercase())
        }
    }
}

/// Relations, CTE names and disallowed functions of one statement.
#[derive(Default)]
struct Found {
    relations: Vec<ObjectName>,
    ctes: Vec<String>,
    functions: Vec<(Span, String)>,
}

impl Visitor for Found {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            self.ctes.extend(with.cte_tables.iter().map(|c| c.alias.name.value.to_lowercase()));
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
            let name = f.name.to_string();
            let allowed = f.name.0.len() == 1 && FUNCTIONS.contains(&name.to_lowercase().as_str());
            if !allowed {
                self.functions.push((f.name.span(), name));
            }
        }
        ControlFlow::Continue(())
    }
}

/// INSERT column lists and UPDATE assignments name existing columns; literals assigned to
/// columns of STRICT tables have the column's type. Returns whether all is well.
fn check_columns(ast: &Ast, visible: &Visible, v: &mut Validation<SqlCode, SqlRisk>) -> bool {
    let mut ok = true;
    let unknown = |v: &mut Validation<SqlCode, SqlRisk>, table: &Table, name: &str, span: Span| {
        let d = v.error(
            SqlCode::UnknownColumn,
            span_range(span),
            format!("{} `{}` has no column `{name}`", if table.view { "view" } else { "table" }, table.name),
        );
        match closest(name, table.columns.iter().map(|c| c.name.as_str())) {
            Some(c) => d.hint(format!("close match: {c}")),
            None => d.hint(format!(
                "columns: {}",
                table.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
            )),
        };
    };
    match ast {
        Ast::Insert(i) => {
            let TableObject::TableName(n) = &i.table else { return true };
            let Some(table) = visible.get(&n.to_string()) else { return true };
            let mut columns: Vec<Option<&Column>> = Vec::new();
            for ident in &i.columns {
                let c = table.column(&ident.value);
                if c.is_none() {
                    unknown(v, table, &ident.value, ident.span);
                    ok = false;
                }
                columns.push(c);
            }
            if i.columns.is_empty() {
                columns = table.columns.iter().map(Some).collect();
            }
            if let (true, Some(SetExpr::Values(values))) = (table.strict, i.source.as_ref().map(|q| &*q.body))
            {
                for row in &values.rows {
                    for (expr, column) in row.iter().zip(&columns) {
                        if let Some(c) = column {
                            ok &= literal_fits(expr, c, table, v);
                        }
                    }
                }
            }
        }
        Ast::Update(u) => {
            let TableFactor::Table { name, .. } = &u.table.relation else { return true };
            let Some(table) = visible.get(&name.to_string()) else { return true };
            for a in &u.assignments {
                let AssignmentTarget::ColumnName(col) = &a.target else { continue };
                let Some(ObjectNamePart::Identifier(ident)) = col.0.last() else { continue };
                match table.column(&ident.value) {
                    None => {
                        unknown(v, table, &ident.value, ident.span);
                        ok = false;
                    }
                    Some(c) if table.strict => ok &= literal_fits(&a.value, c, table, v),
                    Some(_) => {}
                }
            }
        }
        _ => {}
    }
    ok
}

/// Whether a literal can be stored in a column of a STRICT table (SQLite converts losslessly
/// or refuses); reports `type_mismatch` when it cannot.
fn literal_fits(expr: &Expr, column: &Column, table: &Table, v: &mut Validation<SqlCode, SqlRisk>) -> bool {
    let Expr::Value(ValueWithSpan { value, span }) = expr else { return true };
    let (given, fits) = match (value, column.ty) {
        (Value::SingleQuotedString(s), ColType::Integer) => (
            "TEXT",
            s.trim().parse::<i64>().is_ok() || s.trim().parse::<f64>().is_ok_and(|f| f.fract() == 0.0),
        ),
        (Value::SingleQuotedString(s), ColType::Real) => ("TEXT", s.trim().parse::<f64>().is_ok()),
        (Value::Number(n, _), ColType::Integer) => ("REAL", n.parse::<f64>().is_ok_and(|f| f.fract() == 0.0)),
        (Value::SingleQuotedString(_), ColType::Blob) => ("TEXT", false),
        (Value::Number(..), ColType::Blob) => ("a number", false),
        _ => return true,
    };
    if !fits {
        v.error(
            SqlCode::TypeMismatch,
            span_range(*span),
            format!(
                "{value} ({given}) cannot be stored in column `{}` ({}) of STRICT table `{}`",
                column.name, column.declared, table.name
            ),
        )
        .hint(match column.ty {
            ColType::Integer => "write an integer",
            ColType::Real => "write a number",
            _ => "write a blob literal such as x'00ff'",
        });
    }
    fits
}

/// SQLite's own check: compile the statement (nothing runs) under the Language's authorizer
/// and classify a failure. Returns whether the statement compiled.
fn prepare(
    db: &Db,
    src: &Source<'_>,
    stmt: &Statement,
    visible: &Visible,
    analysis: &Analysis,
    v: &mut Validation<SqlCode, SqlRisk>,
) -> bool {
    db.take_denials();
    // Cached: the run that follows prepares the same text (see `Db::wrap`).
    let result = db.conn.prepare_cached(&stmt.sql).map(|_| ());
    let denials = db.take_denials();
    let Err(e) = result else { return true };
    let (message, offset) = match &e {
        rusqlite::Error::SqlInputError { msg, offset, .. } => (msg.clone(), usize::try_from(*offset).ok()),
        rusqlite::Error::SqliteFailure(_, Some(msg)) => (msg.clone(), None),
        other => (other.to_string(), None),
    };
    let at = offset
        .and_then(|o| stmt.token_covering(src, stmt.start_byte + o))
        .map(token_range)
        .unwrap_or(stmt.range);
    let tables: Vec<&Table> = analysis.refs.iter().filter_map(|r| visible.get(&r.entry)).collect();
    if !denials.is_empty() || message.contains("not authorized") {
        let what = denials.first().cloned().unwrap_or_else(|| "this operation".to_owned());
        v.error(SqlCode::ForbiddenStatement, at, format!("{what} is outside sql/sqlite-3 ({message})"))
            .hint("programs are SELECT, INSERT, UPDATE, DELETE and DROP TABLE statements using the listed functions");
    } else if let Some(name) = message.strip_prefix("no such column: ") {
        let column = name.rsplit('.').next().unwrap_or(name);
        let d = v.error(
            SqlCode::UnknownColumn,
            at,
            format!("no column `{name}` in the tables and views of this statement"),
        );
        match closest(column, tables.iter().flat_map(|t| t.columns.iter().map(|c| c.name.as_str()))) {
            Some(c) => d.hint(format!("close match: {c}")),
            None => d.hint("the catalog entry's output_schema lists a table's columns"),
        };
    } else if let Some(name) = message.strip_prefix("ambiguous column name: ") {
        let owners: Vec<String> = tables
            .iter()
            .filter(|t| t.column(name).is_some())
            .map(|t| format!("{}.{name}", t.name))
            .collect();
        v.error(
            SqlCode::AmbiguousColumn,
            at,
            format!("column `{name}` exists in more than one table of this statement"),
        )
        .hint(if owners.is_empty() {
            "qualify the column with its table name or alias".to_owned()
        } else {
            format!("qualify it: {}", owners.join(" or "))
        });
    } else if let Some(name) = message.strip_prefix("no such table: ") {
        v.error(SqlCode::UnknownTable, at, format!("no table or view `{name}` in the catalog"));
    } else if let Some(name) = message.strip_prefix("no such function: ") {
        v.error(SqlCode::ForbiddenStatement, at, format!("function {name}() is outside sql/sqlite-3"));
    } else if message.contains("syntax error")
        || message.contains("incomplete input")
        || message.contains("unrecognized token")
    {
        v.error(SqlCode::SyntaxError, at, format!("SQLite: {message}"));
    } else {
        v.constraint(at, format!("SQLite refuses the statement: {message}"));
    }
    false
}
