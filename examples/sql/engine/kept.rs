//! Programs whose validation found no error, kept for the run that usually follows: a run
//! checks its program again before its first statement, and parsing, resolving and preparing
//! the SQL was most of that check (30% of a three-statement run's instructions).
//!
//! A check's result depends on the program's text, on the catalog it resolved names against
//! (the snapshot's version, a digest of every entry) and on the database's schema (SQLite's
//! `schema_version`, which every schema change moves). A run finds a kept check only when all
//! three are the same; anything else is checked again, as before.

use std::sync::Arc;

use pilotage::engine::CatalogSnapshot;
use pilotage::prelude::*;

use super::check::Analysis;
use super::recent::Recent;
use super::text::Statement;

/// The statements of one checked program, with what was learned about each.
pub type Checked = Arc<Vec<(Statement, Analysis)>>;

/// How many checks are kept (the oldest goes first), and the longest program text kept: a
/// check holds its statements' tokens (tens of bytes each), so each session's database keeps at
/// most a few programs of a few pages each. An agent runs the program it just validated.
pub const KEPT: usize = 4;
pub const KEPT_BYTES: usize = 8 * 1024;

#[derive(PartialEq, Eq)]
struct Key {
    program: String,
    catalog: Option<String>,
    schema: i64,
}

impl Key {
    fn of(program: &Json, catalog: Option<&CatalogSnapshot>, schema: i64) -> Option<Key> {
        let program = text(program)?.to_owned();
        Some(Key { program, catalog: catalog.map(|c| c.version().to_owned()), schema })
    }

    /// Whether this is the key of `program` against `catalog` at `schema` (compared in place:
    /// a run looks its check up without copying its program).
    fn is(&self, program: &str, catalog: Option<&CatalogSnapshot>, schema: i64) -> bool {
        self.schema == schema
            && self.catalog.as_deref() == catalog.map(|c| c.version())
            && self.program == program
    }
}

/// The text of a program short enough to keep its check.
fn text(program: &Json) -> Option<&str> {
    program.as_str().filter(|text| text.len() <= KEPT_BYTES)
}

/// The kept checks of one database.
pub struct Checks(Recent<Key, Checked>);

impl Default for Checks {
    fn default() -> Self {
        Checks(Recent::new(KEPT))
    }
}

impl Checks {
    /// Keep `checked`, the whole result of a check of `program` against `catalog` at `schema`
    /// that reported no error and was not cancelled.
    pub fn keep(&self, program: &Json, catalog: Option<&CatalogSnapshot>, schema: i64, checked: Checked) {
        if let Some(key) = Key::of(program, catalog, schema) {
            self.0.keep(key, checked);
        }
    }

    /// The kept check of `program` against `catalog` at `schema`, if there is one.
    pub fn get(&self, program: &Json, catalog: Option<&CatalogSnapshot>, schema: i64) -> Option<Checked> {
        let program = text(program)?;
        self.0.find(|key| key.is(program, catalog, schema))
    }
}
