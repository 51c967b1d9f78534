//! The catalog an engine hands the runtime: an immutable [`CatalogSnapshot`] per caller, entries
//! sorted by id and a `catalog_version` computed once, when the snapshot is built; `get` is a
//! binary search, and the token moves exactly when a visible entry's defined fields (other than
//! `revision`) change. Each entry's defined fields are digested with the token, so the changes
//! between two snapshots ([`CatalogSnapshot::changes_to`]) cost a comparison of digests, and the
//! `q` index ([`super::search`]) is built once per snapshot, the first time a `q` needs it.

use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use super::search::{contains_text, intersect, SearchIndex, MIN_INDEXED_QUERY};
use crate::model::catalog::{CatalogEntry, ChangeKind};

/// The first 16 bytes of the SHA-256 of an entry's defined fields (its id included).
pub type EntryDigest = [u8; 16];

/// Ids with their entries' digests, sorted by id: a [`CatalogSnapshot`], or the list a durable
/// store keeps of a snapshot it served (`state::catalog_history::DigestList`).
pub trait DigestedIds {
    /// The digests, one per id, in id order.
    fn digests(&self) -> &[EntryDigest];
    /// The id at position `i` (`None` past the end).
    fn id_at(&self, i: usize) -> Option<&str>;
}

impl DigestedIds for CatalogSnapshot {
    fn digests(&self) -> &[EntryDigest] {
        &self.digests
    }
    fn id_at(&self, i: usize) -> Option<&str> {
        self.entries.get(i).map(|e| e.id.as_str())
    }
}

/// What a change from `old` to `new` digest is: none before is added, none after is removed.
pub fn kind_of(old: Option<EntryDigest>, new: Option<EntryDigest>) -> ChangeKind {
    match (old, new) {
        (None, _) => ChangeKind::Added,
        (Some(_), None) => ChangeKind::Removed,
        (Some(_), Some(_)) => ChangeKind::Modified,
    }
}

/// One id that differs between two digest lists: its digest before and after (`None`: absent).
pub type DigestChange<'a> = (&'a str, Option<EntryDigest>, Option<EntryDigest>);

/// The ids that differ from `old` to `new`, in id order, with their digests on both sides. One
/// walk over both lists that skips runs of equal digests (an equal digest is an equal id with
/// equal defined fields), comparing ids only where they differ: no copy of either list.
pub fn changes_with_digests<'a>(
    old: &'a impl DigestedIds,
    new: &'a impl DigestedIds,
) -> Vec<DigestChange<'a>> {
    let (od, nd) = (old.digests(), new.digests());
    let mut changes = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < od.len() && j < nd.len() {
        let same = od[i..].iter().zip(&nd[j..]).take_while(|(a, b)| a == b).count();
        (i, j) = (i + same, j + same);
        let (Some(a), Some(b)) = (old.id_at(i), new.id_at(j)) else { break };
        match a.cmp(b) {
            std::cmp::Ordering::Less => {
                changes.push((a, od.get(i).copied(), None));
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                changes.push((b, None, nd.get(j).copied()));
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                changes.push((b, od.get(i).copied(), nd.get(j).copied()));
                (i, j) = (i + 1, j + 1);
            }
        }
    }
    let removed = (i..od.len()).filter_map(|k| Some((old.id_at(k)?, od.get(k).copied(), None)));
    changes.extend(removed);
    let added = (j..nd.len()).filter_map(|k| Some((new.id_at(k)?, None, nd.get(k).copied())));
    changes.extend(added);
    changes
}

/// An immutable, sorted view of the catalog visible to one caller.
///
/// A Language that declares `catalog` names a method answering one (`catalog = entries`, with
/// `fn entries(&self, caller: &Caller) -> Arc<CatalogSnapshot>`); build it from
/// [`CatalogEntry`] values when the world changes and hand out clones of the `Arc`. The runtime
/// serves `pilotage_catalog` from it: `{"verb": "list"}` answers the entries under `items`
/// (with `q`, `kind`, paging), `{"verb": "get", "id": ...}` one entry, `{"verb":
/// "changed_since", "catalog_version": ...}` the changes.
///
/// ```
/// use pilotage::prelude::*;
///
/// #[derive(Clone, Copy, pilotage::EntryKinds)]
/// enum Kind { #[kind(callable)] Capability }
/// #[derive(Clone, Copy, pilotage::RiskLevels)]
/// enum Risk { #[risk(read_only)] Safe, #[risk(write)] Write }
///
/// let snapshot = CatalogSnapshot::new(vec![
///     CatalogEntry::new("lights.set", Kind::Capability, "Set lights", Risk::Write),
///     CatalogEntry::new("lights.get", Kind::Capability, "Read lights", Risk::Safe).description("Reads."),
/// ]);
/// assert_eq!(snapshot.entries()[0].id, "lights.get"); // sorted by id
/// assert_eq!(snapshot.get("lights.set").map(|e| e.risk.as_str()), Some("write"));
/// let fewer = CatalogSnapshot::new(snapshot.entries()[..1].to_vec());
/// assert_ne!(snapshot.version(), fewer.version()); // the catalog_version token
/// ```
#[derive(Clone, Debug)]
pub struct CatalogSnapshot {
    entries: Vec<CatalogEntry>,
    /// One per entry, in the same order.
    digests: Vec<EntryDigest>,
    version: String,
    search: OnceLock<SearchIndex>,
}

impl CatalogSnapshot {
    /// Build a snapshot: sorts by id, drops later duplicates of an id, computes the token (the
    /// SHA-256 of the JSON array of the entries' defined fields) and each entry's digest.
    pub fn new(mut entries: Vec<CatalogEntry>) -> Self {
        entries.sort_by(|a, b| a.id.cmp(&b.id));
        entries.dedup_by(|b, a| a.id == b.id);
        let mut whole = Sha256::new();
        whole.update(b"[");
        let mut digests = Vec::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            let bytes = serde_json::to_vec(&entry.versioned_form()).unwrap_or_default();
            if i > 0 {
                whole.update(b",");
            }
            whole.update(&bytes);
            let mut digest = EntryDigest::default();
            digest.copy_from_slice(&Sha256::digest(&bytes)[..16]);
            digests.push(digest);
        }
        whole.update(b"]");
        let version = crate::model::digest::token_of("cv_", &whole.finalize());
        CatalogSnapshot { entries, digests, version, search: OnceLock::new() }
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

    /// The ids added, removed or modified from `self` to `next`, in id order. One walk over both
    /// snapshots that skips runs of equal digests (an equal digest is an equal id with equal
    /// defined fields), comparing ids only where they differ: no copy of either snapshot, and
    /// nothing at all when the tokens match.
    pub fn changes_to<'a>(&'a self, next: &'a CatalogSnapshot) -> Vec<(&'a str, ChangeKind)> {
        if self.version == next.version {
            return Vec::new();
        }
        changes_with_digests(self, next).into_iter().map(|(id, old, new)| (id, kind_of(old, new))).collect()
    }

    /// The entries from position `from` on whose id, name, description or a tag contains `q`,
    /// ignoring case (all of them when `q` is `None`), in id order. A `q` of three bytes or
    /// more is answered from the snapshot's index, built on first use; a shorter one scans.
    pub fn matching<'a>(
        &'a self,
        q: Option<&str>,
        from: usize,
    ) -> Box<dyn Iterator<Item = &'a CatalogEntry> + 'a> {
        let rest = self.entries.get(from..).unwrap_or_default();
        let Some(lowered) = q.map(str::to_lowercase) else {
            return Box::new(rest.iter());
        };
        // The index numbers entries with `u32`s.
        if lowered.len() < MIN_INDEXED_QUERY || u32::try_from(self.entries.len()).is_err() {
            return Box::new(rest.iter().filter(move |e| contains_text(e, &lowered)));
        }
        let lists = self.search.get_or_init(|| SearchIndex::build(&self.entries)).lists(&lowered);
        Box::new(
            intersect(lists, from)
                .filter_map(|p| self.entries.get(p))
                .filter(move |e| contains_text(e, &lowered)),
        )
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
