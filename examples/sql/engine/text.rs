//! The program text: tokens with their 1-based positions, text ranges (end exclusive: the
//! column just past the last character), statements split at top-level `;`, and the `:name`
//! placeholders. Shared by validation and execution, so both see the same statements under
//! the same identifiers (`stmt-1`, `stmt-2`, ...). The tokenizer's dialect is the caller's:
//! `sql/sqlite-3` splits with SQLite's, `sql/postgres` (which includes this file by path) with
//! PostgreSQL's.

// A server or test that hosts both SQL engines includes this file once per engine.
#![allow(clippy::duplicate_mod)]

use pilotage::prelude::*;
use sqlparser::dialect::Dialect;
use sqlparser::tokenizer::{Location, Span, Token, TokenWithSpan, Tokenizer};

/// Byte offsets of line starts, to move between (line, column) and byte offsets. Columns
/// count Unicode scalar values, as the tokenizer does.
pub struct Source<'a> {
    pub text: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> Source<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Source { text, line_starts }
    }

    /// The byte offset of a 1-based location (clamped to the text).
    pub fn byte_at(&self, loc: Location) -> usize {
        let line = usize::try_from(loc.line.max(1)).unwrap_or(usize::MAX);
        let Some(start) = self.line_starts.get(line - 1).copied() else {
            return self.text.len();
        };
        let col = usize::try_from(loc.column.max(1)).unwrap_or(usize::MAX) - 1;
        let rest = &self.text[start..];
        rest.char_indices().nth(col).map(|(i, _)| start + i).unwrap_or(self.text.len())
    }

    /// The 1-based location of a byte offset.
    pub fn location_of(&self, byte: usize) -> Location {
        let byte = byte.min(self.text.len());
        let line = self.line_starts.partition_point(|s| *s <= byte);
        let start = self.line_starts[line - 1];
        let column = self.text[start..byte].chars().count() + 1;
        Location { line: line as u64, column: column as u64 }
    }

    /// The whole-document range: from 1:1 to just past the last character.
    pub fn whole(&self) -> TextRange {
        range(Location { line: 1, column: 1 }, self.location_of(self.text.len()))
    }
}

/// A text range from two tokenizer locations.
pub fn range(start: Location, end: Location) -> TextRange {
    let n = |v: u64| u32::try_from(v.max(1)).unwrap_or(u32::MAX);
    TextRange::new(n(start.line), n(start.column), n(end.line), n(end.column))
}

/// The range of a token.
pub fn token_range(t: &TokenWithSpan) -> TextRange {
    range(t.span.start, t.span.end)
}

/// Whether a token carries meaning (not whitespace or a comment).
pub fn significant(t: &TokenWithSpan) -> bool {
    !matches!(t.token, Token::Whitespace(_) | Token::EOF)
}

/// One `:name` placeholder.
#[derive(Clone, Debug)]
pub struct Placeholder {
    /// The name without the colon.
    pub name: String,
    /// Where it is, colon included (sql/postgres rewrites it to `$k`).
    #[allow(dead_code)]
    pub span: Span,
}

/// A placeholder in a form outside the Language (`?`, `?1`, `$x`, `@x`).
#[derive(Clone, Debug)]
pub struct BadPlaceholder {
    pub text: String,
    pub range: TextRange,
}

impl BadPlaceholder {
    /// The hint of every `bad_placeholder` diagnostic.
    pub const HINT: &'static str = "parameters are named: write :name and pass {\"name\": value} as input";

    /// The diagnostic's message.
    pub fn message(&self) -> String {
        format!("placeholder `{}` is not a `:name` placeholder", self.text)
    }
}

/// One top-level statement: its identifier, tokens (whitespace included), text and range.
pub struct Statement {
    /// `stmt-N`: N is the 1-based position among the program's non-empty statements.
    pub id: String,
    pub tokens: Vec<TokenWithSpan>,
    /// Byte offset of the statement's first significant token in the program.
    pub start_byte: usize,
    /// The statement's text, from its first to its last significant token.
    pub sql: String,
    pub range: TextRange,
    pub placeholders: Vec<Placeholder>,
    pub bad_placeholders: Vec<BadPlaceholder>,
}

impl Statement {
    /// The first significant token (every statement has one).
    pub fn first(&self) -> &TokenWithSpan {
        self.tokens.iter().find(|t| significant(t)).unwrap_or(&self.tokens[0])
    }

    /// The significant token starting at `loc`, if any.
    pub fn token_at(&self, loc: Location) -> Option<&TokenWithSpan> {
        self.tokens.iter().find(|t| significant(t) && t.span.start == loc)
    }

    /// The significant token covering the byte offset `byte` of the program.
    pub fn token_covering(&self, src: &Source<'_>, byte: usize) -> Option<&TokenWithSpan> {
        self.tokens
            .iter()
            .filter(|t| significant(t))
            .find(|t| src.byte_at(t.span.start) <= byte && byte < src.byte_at(t.span.end))
    }

    /// The last significant token.
    pub fn last(&self) -> &TokenWithSpan {
        self.tokens.iter().rev().find(|t| significant(t)).unwrap_or(&self.tokens[0])
    }

    /// The `:name` placeholders' distinct names, in order of first use.
    pub fn parameter_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for p in &self.placeholders {
            if !names.contains(&p.name) {
                names.push(p.name.clone());
            }
        }
        names
    }
}

/// A tokenizer failure: its message and location.
pub struct LexError {
    pub message: String,
    pub range: TextRange,
}

/// Tokenize `text` with `dialect` and split it into statements at top-level `;` (empty
/// statements and comments alone do not count).
pub fn split(src: &Source<'_>, dialect: &dyn Dialect) -> Result<Vec<Statement>, LexError> {
    let tokens = Tokenizer::new(dialect, src.text).tokenize_with_location().map_err(|e| {
        let end = Location { line: e.location.line, column: e.location.column + 1 };
        LexError { message: e.message, range: range(e.location, end) }
    })?;
    let mut pieces: Vec<Vec<TokenWithSpan>> = vec![Vec::new()];
    for t in tokens {
        if t.token == Token::SemiColon {
            pieces.push(Vec::new());
        } else if t.token != Token::EOF {
            pieces.last_mut().expect("one piece at least").push(t);
        }
    }
    let mut statements = Vec::new();
    for tokens in pieces {
        let Some(first) = tokens.iter().find(|t| significant(t)) else { continue };
        let last = tokens.iter().rev().find(|t| significant(t)).unwrap_or(first);
        let (start, end) = (src.byte_at(first.span.start), src.byte_at(last.span.end));
        let (placeholders, bad_placeholders) = placeholders(&tokens);
        statements.push(Statement {
            id: format!("stmt-{}", statements.len() + 1),
            range: range(first.span.start, last.span.end),
            start_byte: start,
            sql: src.text[start..end.max(start)].to_owned(),
            tokens,
            placeholders,
            bad_placeholders,
        });
    }
    Ok(statements)
}

/// `:name` is a colon immediately followed by a word; every other placeholder form is bad.
fn placeholders(tokens: &[TokenWithSpan]) -> (Vec<Placeholder>, Vec<BadPlaceholder>) {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let next = tokens.get(i + 1).filter(|n| n.span.start == t.span.end);
        match (&t.token, next.map(|n| &n.token)) {
            (Token::Colon, Some(Token::Word(w))) if w.quote_style.is_none() => {
                let end = next.map(|n| n.span.end).unwrap_or(t.span.end);
                good.push(Placeholder { name: w.value.clone(), span: Span::new(t.span.start, end) });
            }
            (Token::AtSign, Some(Token::Word(w))) => {
                let end = next.map(|n| n.span.end).unwrap_or(t.span.end);
                bad.push(BadPlaceholder { text: format!("@{}", w.value), range: range(t.span.start, end) });
            }
            (Token::Placeholder(p), _) if !p.starts_with(':') => {
                bad.push(BadPlaceholder { text: p.clone(), range: token_range(t) });
            }
            (Token::Placeholder(p), _) => {
                good.push(Placeholder { name: p[1..].to_owned(), span: t.span });
            }
            _ => {}
        }
    }
    (good, bad)
}

/// Why a program has no statement to check: not text (`malformed`), not tokenizable, or
/// empty; reported by the engine with its own codes.
pub struct NoStatements {
    /// `malformed_program` (else `syntax_error`).
    pub malformed: bool,
    pub range: TextRange,
    pub message: String,
    pub hint: Option<&'static str>,
}

/// The program's text and its statements (tokenized with `dialect`).
pub fn statements<'a>(
    program: &'a Json,
    dialect: &dyn Dialect,
) -> Result<(Source<'a>, Vec<Statement>), NoStatements> {
    let Some(sql) = program.as_str() else {
        let kind = match program {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
            Json::String(_) => "a string",
        };
        return Err(NoStatements {
            malformed: true,
            range: TextRange::new(1, 1, 1, 1),
            message: format!("the program must be SQL text (a JSON string), not {kind}"),
            hint: Some("pass the statements as one string: {\"query\": \"SELECT ...\"}"),
        });
    };
    let src = Source::new(sql);
    let statements = split(&src, dialect).map_err(|e| NoStatements {
        malformed: false,
        range: e.range,
        message: e.message,
        hint: None,
    })?;
    if statements.is_empty() {
        return Err(NoStatements {
            malformed: true,
            range: src.whole(),
            message: "the program has no statement".to_owned(),
            hint: Some("write at least one statement, e.g. SELECT * FROM customers"),
        });
    }
    Ok((src, statements))
}

/// `"Expected: x, found: y at Line: 1, Column: 8"` → the message and the location.
pub fn split_location(raw: &str) -> (String, Option<Location>) {
    let Some(i) = raw.rfind(" at Line: ") else { return (raw.to_owned(), None) };
    let rest = &raw[i + " at Line: ".len()..];
    let mut parts = rest.split(", Column: ");
    let line = parts.next().and_then(|l| l.trim().parse().ok());
    let column = parts.next().and_then(|c| c.trim().parse().ok());
    match (line, column) {
        (Some(line), Some(column)) => (raw[..i].to_owned(), Some(Location { line, column })),
        _ => (raw.to_owned(), None),
    }
}
