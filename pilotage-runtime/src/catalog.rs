//! The catalog (Part II §5.4) and the `lookup` operation (Part III §4.2).
//!
//! An engine hands the runtime an immutable [`CatalogSnapshot`] per caller: entries sorted by
//! id and a `catalog_version` computed once, when the snapshot is built. `list` pages by
//! binary search (the cursor is the last id served), `get` is a binary search, and the token
//! moves exactly when a visible entry's defined fields (other than `revision`) change.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::closed_sets::{EntryKind, RiskLevel};
use crate::errors::{ErrorKind, RequestError};
use crate::risk::RiskHints;

/// One environment-bound name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogEntry {
    /// Stable id.
    pub id: String,
    /// Member of the entry-kind set.
    pub kind: String,
    /// Human-readable name.
    pub name: String,
    /// Description (server-authored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Input shape, required for callable kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// Output shape when statically known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Engine-defined risk level.
    pub risk: String,
    /// Generic risk hints.
    pub risk_hints: RiskHints,
    /// Grouping labels.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub tags: Vec<String>,
    /// Languages that may reference the entry (absent: all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub languages: Option<Vec<String>>,
    /// Opaque token that changes when the entry changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

impl CatalogEntry {
    /// A new entry of kind `K` with risk `R`. A callable kind gets a permissive
    /// `{"type":"object"}` input schema until [`Self::input_schema`] sets one.
    ///
    /// ```
    /// use pilotage_runtime::catalog::CatalogEntry;
    /// use pilotage_runtime::closed_sets::{EntryKind, KindMember, RiskLevel, RiskMember};
    /// use pilotage_runtime::risk::RiskHints;
    /// #[derive(Clone, Copy)] struct Cap;
    /// impl EntryKind for Cap {
    ///     const MEMBERS: &'static [KindMember] = &[KindMember { name: "capability", callable: true }];
    ///     fn wire(self) -> &'static str { "capability" }
    ///     fn callable(self) -> bool { true }
    /// }
    /// #[derive(Clone, Copy)] struct Safe;
    /// impl RiskLevel for Safe {
    ///     const MEMBERS: &'static [RiskMember] = &[RiskMember { name: "safe", hints: RiskHints::READ_ONLY }];
    ///     fn wire(self) -> &'static str { "safe" }
    ///     fn hints(self) -> RiskHints { RiskHints::READ_ONLY }
    ///     fn rank(self) -> usize { 0 }
    /// }
    /// let e = CatalogEntry::new("cap_read", Cap, "Read", Safe).description("Reads.");
    /// assert_eq!(e.kind, "capability");
    /// assert!(e.risk_hints.read_only);
    /// assert!(e.input_schema.is_some());
    /// ```
    pub fn new<K: EntryKind, R: RiskLevel>(
        id: impl Into<String>,
        kind: K,
        name: impl Into<String>,
        risk: R,
    ) -> Self {
        CatalogEntry {
            id: id.into(),
            kind: kind.wire().to_owned(),
            name: name.into(),
            description: None,
            input_schema: kind.callable().then(|| serde_json::json!({"type": "object"})),
            output_schema: None,
            risk: risk.wire().to_owned(),
            risk_hints: risk.hints(),
            tags: Vec::new(),
            languages: None,
            revision: None,
        }
    }
    /// Set the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }
    /// Set the input schema.
    pub fn input_schema(mut self, s: Value) -> Self {
        self.input_schema = Some(s);
        self
    }
    /// Set the output schema.
    pub fn output_schema(mut self, s: Value) -> Self {
        self.output_schema = Some(s);
        self
    }
    /// Add a tag.
    pub fn tag(mut self, t: impl Into<String>) -> Self {
        self.tags.push(t.into());
        self
    }
    /// Restrict the entry to some Languages.
    pub fn languages(mut self, l: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.languages = Some(l.into_iter().map(Into::into).collect());
        self
    }
    /// Set the revision token.
    pub fn revision(mut self, r: impl Into<String>) -> Self {
        self.revision = Some(r.into());
        self
    }

    /// The defined fields that drive `catalog_version`: everything but `revision`.
    fn versioned_form(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.remove("revision");
        }
        v
    }
}

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
        CatalogSnapshot { version: crate::digest::token("cv_", &bytes), entries }
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
    /// Only entries in this (caller-scoped) snapshot can ever be suggested.
    pub fn close_matches(&self, name: &str, max: usize) -> Vec<&str> {
        let mut scored: Vec<(usize, &str)> = self
            .entries
            .iter()
            .map(|e| (edit_distance(name, &e.id), e.id.as_str()))
            .filter(|(d, _)| *d <= 3)
            .collect();
        scored.sort();
        scored.into_iter().take(max).map(|(_, id)| id).collect()
    }
}

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

/// `list` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogList {
    /// The page.
    pub items: Vec<CatalogEntry>,
    /// Present when more results remain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The caller-scoped token.
    pub catalog_version: String,
}

/// `get` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogGet {
    /// The entry.
    pub entry: CatalogEntry,
    /// The caller-scoped token.
    pub catalog_version: String,
}

/// One change reported by `changed_since`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogChange {
    /// Entry id.
    pub id: String,
    /// `added`, `removed` or `modified`.
    pub change: ChangeKind,
}

/// The closed change set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// New visible entry.
    Added,
    /// Entry no longer visible.
    Removed,
    /// A defined field changed.
    Modified,
}

/// `changed_since` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogChanges {
    /// The current token.
    pub catalog_version: String,
    /// Changes since the supplied token.
    pub changes: Vec<CatalogChange>,
}

/// The largest page `list` serves.
pub const MAX_PAGE: usize = 100;

/// The `list` filters.
#[derive(Clone, Debug, Default)]
pub struct ListQuery<'a> {
    /// Only this kind.
    pub kind: Option<&'a str>,
    /// Only entries with this tag.
    pub tag: Option<&'a str>,
    /// Free text (only when `catalog.search` is declared).
    pub q: Option<&'a str>,
    /// Opaque cursor from a previous page.
    pub cursor: Option<&'a str>,
    /// Page size (capped at [`MAX_PAGE`]).
    pub limit: Option<usize>,
}

fn matches(e: &CatalogEntry, q: &ListQuery<'_>) -> bool {
    if q.kind.is_some_and(|k| e.kind != k) || q.tag.is_some_and(|t| !e.tags.iter().any(|x| x == t)) {
        return false;
    }
    match q.q {
        None => true,
        Some(text) => {
            let text = text.to_lowercase();
            [Some(&e.id), Some(&e.name), e.description.as_ref()]
                .into_iter()
                .flatten()
                .any(|f| f.to_lowercase().contains(&text))
                || e.tags.iter().any(|t| t.to_lowercase().contains(&text))
        }
    }
}

const CURSOR_PREFIX: &str = "after:";

/// `list`: one page of the snapshot.
pub fn list(snapshot: &CatalogSnapshot, query: &ListQuery<'_>) -> Result<CatalogList, RequestError> {
    let start = match query.cursor {
        None => 0,
        Some(c) => {
            let Some(after) = c.strip_prefix(CURSOR_PREFIX) else {
                return Err(RequestError::invalid("unknown cursor: pass `next_cursor` back unchanged")
                    .with_catalog_version(snapshot.version()));
            };
            snapshot.entries.partition_point(|e| e.id.as_str() <= after)
        }
    };
    let limit = query.limit.unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE);
    let mut items = Vec::with_capacity(limit.min(16));
    let mut next_cursor = None;
    for e in snapshot.entries[start..].iter().filter(|e| matches(e, query)) {
        if items.len() == limit {
            if let Some(last) = items.last() {
                let last: &CatalogEntry = last;
                next_cursor = Some(format!("{CURSOR_PREFIX}{}", last.id));
            }
            break;
        }
        items.push(e.clone());
    }
    Ok(CatalogList { items, next_cursor, catalog_version: snapshot.version().to_owned() })
}

/// `get`: one entry, or `not_found` that still carries the token.
pub fn get(snapshot: &CatalogSnapshot, id: &str) -> Result<CatalogGet, RequestError> {
    match snapshot.get(id) {
        Some(e) => Ok(CatalogGet { entry: e.clone(), catalog_version: snapshot.version().to_owned() }),
        None => Err(RequestError::not_found(format!("unknown catalog entry '{id}'"))
            .with_catalog_version(snapshot.version())),
    }
}

/// The snapshots recently served to one caller, so `changed_since` can diff against them.
#[derive(Debug, Default)]
pub struct History {
    recent: VecDeque<Arc<CatalogSnapshot>>,
}

/// How many past snapshots a [`History`] keeps.
pub const HISTORY_DEPTH: usize = 32;

impl History {
    /// Remember `snapshot` (no-op when its token is already the latest).
    pub fn remember(&mut self, snapshot: &Arc<CatalogSnapshot>) {
        if self.recent.back().is_some_and(|s| s.version == snapshot.version) {
            return;
        }
        self.recent.retain(|s| s.version != snapshot.version);
        self.recent.push_back(snapshot.clone());
        while self.recent.len() > HISTORY_DEPTH {
            self.recent.pop_front();
        }
    }

    /// `changed_since`: the changes from the snapshot with token `since` to `current`.
    pub fn changed_since(
        &self,
        current: &CatalogSnapshot,
        since: &str,
    ) -> Result<CatalogChanges, RequestError> {
        let Some(old) = self.recent.iter().find(|s| s.version == since) else {
            return Err(RequestError::new(
                ErrorKind::UnknownBaseline,
                "cannot compute changes from that catalog_version: list the catalog again",
            )
            .with_catalog_version(current.version()));
        };
        let before: BTreeMap<&str, Value> =
            old.entries.iter().map(|e| (e.id.as_str(), e.versioned_form())).collect();
        let after: BTreeMap<&str, Value> =
            current.entries.iter().map(|e| (e.id.as_str(), e.versioned_form())).collect();
        let mut changes = Vec::new();
        for (id, form) in &after {
            match before.get(id) {
                None => changes.push((id, ChangeKind::Added)),
                Some(old) if old != form => changes.push((id, ChangeKind::Modified)),
                _ => {}
            }
        }
        for id in before.keys().filter(|id| !after.contains_key(*id)) {
            changes.push((id, ChangeKind::Removed));
        }
        changes.sort_by(|a, b| a.0.cmp(b.0));
        Ok(CatalogChanges {
            catalog_version: current.version().to_owned(),
            changes: changes
                .into_iter()
                .map(|(id, change)| CatalogChange { id: (*id).to_owned(), change })
                .collect(),
        })
    }
}
