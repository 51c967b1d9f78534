//! The catalog an engine hands the runtime: an immutable [`CatalogSnapshot`] per caller, entries
//! sorted by id and a `catalog_version` computed once, when the snapshot is built; `get` is a
//! binary search, and the token moves exactly when a visible entry's defined fields (other than
//! `revision`) change.

use serde_json::Value;

use crate::model::catalog::CatalogEntry;

/// An immutable, sorted view of the catalog visible to one caller.
#[derive(Clone, Debug)]
pub struct CatalogSnapshot {
    entries: Vec<CatalogEntry>,
    version: String,
}

impl CatalogSnapshot {
    /// Build a snapshot: sorts by id, drops later duplicates of an id, computes the token.
    pub fn new(mut entries: Vec<CatalogEntry>) -> Self {
        entries.sort_by(|a, b| a.id.cmp(&b.id));
        entries.dedup_by(|b, a| a.id == b.id);
        let forms: Vec<Value> = entries.iter().map(CatalogEntry::versioned_form).collect();
        let bytes = serde_json::to_vec(&forms).unwrap_or_default();
        CatalogSnapshot { version: crate::model::digest::token("cv_", &bytes), entries }
    }
    /// The `catalog_version` token.
    pub fn version(&self) -> &str {
        &self.version
    }
    /// All entries, sorted by id.
    pub fn entries(&self) -> &[CatalogEntry] {
        &self.entries
    }
    /// The entry `id`, by binary search.
    pub fn get(&self, id: &str) -> Option<&CatalogEntry> {
        self.entries.binary_search_by(|e| e.id.as_str().cmp(id)).ok().map(|i| &self.entries[i])
    }
    /// Visible ids closest to `name` by edit distance (at most `max`, distance ≤ 3), for hints.
    /// Only entries in this (caller-scoped) snapshot can ever be suggested. The work is bounded:
    /// names longer than [`CLOSE_MATCH_MAX_LEN`] get no suggestion, candidates whose length
    /// differs by more than 3 are skipped without a comparison, and at most
    /// [`CLOSE_MATCH_CANDIDATES`] are compared.
    pub fn close_matches(&self, name: &str, max: usize) -> Vec<&str> {
        let len = name.chars().count();
        if len > CLOSE_MATCH_MAX_LEN {
            return Vec::new();
        }
        let mut scored: Vec<(usize, &str)> = self
            .entries
            .iter()
            .filter(|e| e.id.len().abs_diff(name.len()) <= 3 * 4 && e.id.chars().count().abs_diff(len) <= 3)
            .take(CLOSE_MATCH_CANDIDATES)
            .map(|e| (edit_distance(name, &e.id), e.id.as_str()))
            .filter(|(d, _)| *d <= 3)
            .collect();
        scored.sort();
        scored.into_iter().take(max).map(|(_, id)| id).collect()
    }
}

/// Names longer than this get no close-match suggestion (an edit distance is quadratic).
pub const CLOSE_MATCH_MAX_LEN: usize = 64;

/// The most catalog entries one close-match lookup compares.
pub const CLOSE_MATCH_CANDIDATES: usize = 4_096;

/// Levenshtein distance, for close-match hints.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
