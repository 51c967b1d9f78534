//! The parse of one statement and what it does: its kind ([`Shape`]) and what it reaches
//! ([`Found`]: relations, functions, CTE names, write targets, row locks).

use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, FromTable, ObjectName, ObjectType, Query, SetExpr, Spanned, Statement as Ast, TableFactor,
    TableObject, Value, Visitor,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Span, Token};

use super::super::text::{self, Statement};
use super::super::PgRisk;
use super::folded;
use super::rules::Access;

/// Parse one statement (PostgreSQL dialect). `Err(Some(..))`: not parsed, with sqlparser's
/// message and location; `Err(None)`: nested past the parser's bound.
pub(super) fn parse(stmt: &Statement) -> Result<Ast, Option<(String, Option<Location>)>> {
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
pub(super) struct Shape {
    pub(super) targets: Vec<(Span, Access)>,
    pub(super) new_name: Option<Span>,
    pub(super) created: Option<String>,
    pub(super) drops: Vec<ObjectName>,
    pub(super) ddl: bool,
    pub(super) risk: PgRisk,
}

/// The statement's shape, or `None` for a kind outside the Language. DML targets are found
/// by the visitor (they may sit in `WITH`).
pub(super) fn classify(ast: &Ast) -> Option<Shape> {
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
pub(super) struct Found {
    pub(super) relations: Vec<ObjectName>,
    pub(super) ctes: Vec<String>,
    pub(super) functions: Vec<(Span, String)>,
    pub(super) writes: Vec<(Span, Access)>,
    pub(super) unqualified_delete: bool,
    pub(super) select_into: Option<Span>,
    /// `FOR UPDATE`, `FOR SHARE`, ...: the rows it reads it also locks.
    pub(super) locks: bool,
    /// Set-returning functions in `FROM` (`generate_series(...)`): calls, not relations.
    table_functions: Vec<Span>,
}

/// Whether a `WHERE` clause is missing or always true (`WHERE true`, `WHERE 1 = 1`).
pub(super) fn every_row(selection: Option<&Expr>) -> bool {
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
        self.locks |= !query.locks.is_empty();
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

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, args: Some(_), .. } = factor {
            if let Some(last) = name.0.last() {
                self.functions.push((name.span(), folded(last)));
                self.table_functions.push(name.span());
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
        if self.table_functions.contains(&relation.span()) {
            return ControlFlow::Continue(());
        }
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
