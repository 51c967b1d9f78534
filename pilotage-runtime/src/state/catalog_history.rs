//! `changed_since`: the difference between a snapshot served to the caller earlier and the
//! current one, proportional to the changes.
//!
//! A `catalog_version` is the SHA-256 of the whole visible content, so the difference between two
//! versions is a function of the two tokens alone, whoever was served them. A store keeps, per
//! owner and Language, the chain of versions it served (the last [`HISTORY_DEPTH`]), and, per
//! Language, the [`CatalogDelta`] between each two versions served one after the other (shared by
//! every owner and replica). `changed_since` composes the deltas along the owner's chain: no
//! snapshot is read back. Computing a delta needs the previous snapshot's content: the process
//! keeps the last few it served ([`RecentSnapshots`]), and a store keeps the ids and digests of
//! each owner's last version ([`DigestList`]) for a replica that did not serve it.
//!
//! [`HISTORY_DEPTH`]: super::HISTORY_DEPTH

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use super::shared::{StoreError, StoreResult};
use crate::engine::catalog::{changes_with_digests, kind_of, CatalogSnapshot, DigestedIds, EntryDigest};
use crate::model::catalog::{CatalogChange, CatalogChanges, ChangeKind};
use crate::model::errors::{ErrorKind, RequestError};

/// `changed_since` from the changes a store found (`None`: `since` is unknown or forgotten, the
/// `unknown_baseline` error carrying the current `catalog_version`).
pub fn answer(
    changes: Option<Vec<(String, ChangeKind)>>,
    current: &CatalogSnapshot,
) -> Result<CatalogChanges, RequestError> {
    let Some(changes) = changes else {
        return Err(RequestError::new(
            ErrorKind::UnknownBaseline,
            "cannot compute changes from that catalog_version: list the catalog again",
        )
        .with_catalog_version(current.version()));
    };
    Ok(CatalogChanges {
        catalog_version: current.version().to_owned(),
        changes: changes.into_iter().map(|(id, change)| CatalogChange { id, change }).collect(),
    })
}

/// `changed_since`: the changes from `old` (the snapshot with token `since` served to the
/// caller, if still remembered) to `current`.
pub fn changed_since(
    old: Option<&CatalogSnapshot>,
    current: &CatalogSnapshot,
    since: &str,
) -> Result<CatalogChanges, RequestError> {
    let old = old.filter(|s| s.version() == since);
    answer(old.map(|old| changes_between(old, current)), current)
}

/// [`CatalogSnapshot::changes_to`] with owned ids: nothing at once when the tokens match.
pub fn changes_between(old: &CatalogSnapshot, new: &CatalogSnapshot) -> Vec<(String, ChangeKind)> {
    old.changes_to(new).into_iter().map(|(id, change)| (id.to_owned(), change)).collect()
}

/// One id that differs between two versions: its digest before and after (`None`: absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeltaEntry {
    /// The entry id.
    pub id: String,
    /// Its digest in the older version, if there.
    pub old: Option<EntryDigest>,
    /// Its digest in the newer version, if there.
    pub new: Option<EntryDigest>,
}

/// The ids that differ from one catalog version to another, sorted by id, each with its digests
/// on both sides; never an id whose digests are equal (or both absent).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CatalogDelta(Vec<DeltaEntry>);

impl CatalogDelta {
    /// The delta from `old` to `new` (a snapshot or a stored [`DigestList`]): one digest walk.
    pub fn between(old: &impl DigestedIds, new: &impl DigestedIds) -> Self {
        let walked = changes_with_digests(old, new).into_iter();
        CatalogDelta(walked.map(|(id, old, new)| DeltaEntry { id: id.to_owned(), old, new }).collect())
    }

    /// The entries, sorted by id.
    pub fn entries(&self) -> &[DeltaEntry] {
        &self.0
    }

    /// The delta from the newer version back to the older one.
    pub fn inverse(self) -> Self {
        CatalogDelta(self.0.into_iter().map(|e| DeltaEntry { old: e.new, new: e.old, ..e }).collect())
    }

    /// `self` followed by `next`: per id the first old digest and the last new one; an id that
    /// ends where it began drops out.
    pub fn then(self, next: CatalogDelta) -> Self {
        let mut out = Vec::with_capacity(self.0.len() + next.0.len());
        let (mut a, mut b) = (self.0.into_iter().peekable(), next.0.into_iter().peekable());
        loop {
            let order = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) => x.id.cmp(&y.id),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => break,
            };
            let merged = match order {
                std::cmp::Ordering::Less => a.next(),
                std::cmp::Ordering::Greater => b.next(),
                std::cmp::Ordering::Equal => {
                    a.next().zip(b.next()).map(|(x, y)| DeltaEntry { new: y.new, ..x })
                }
            };
            out.extend(merged.filter(|e| e.old != e.new));
        }
        CatalogDelta(out)
    }

    /// The changes `changed_since` answers: per id, added, removed or modified.
    pub fn changes(&self) -> Vec<(String, ChangeKind)> {
        self.0.iter().map(|e| (e.id.clone(), kind_of(e.old, e.new))).collect()
    }

    /// The stored form: per entry a flag byte (1: old digest, 2: new digest), the digests
    /// present, the id's length (4 bytes, little-endian) and the id.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.0.len() * 48);
        for e in &self.0 {
            out.push(u8::from(e.old.is_some()) | (u8::from(e.new.is_some()) << 1));
            out.extend(e.old.iter().chain(&e.new).flatten());
            put_id(&mut out, &e.id);
        }
        out
    }

    /// Read back [`CatalogDelta::encode`]'s form; anything else is a [`StoreError`].
    pub fn decode(mut bytes: &[u8]) -> StoreResult<Self> {
        let mut out = Vec::new();
        while let Some((&flags, rest)) = bytes.split_first() {
            bytes = rest;
            let old = if flags & 1 != 0 { Some(take_digest(&mut bytes)?) } else { None };
            let new = if flags & 2 != 0 { Some(take_digest(&mut bytes)?) } else { None };
            out.push(DeltaEntry { id: take_id(&mut bytes)?, old, new });
        }
        Ok(CatalogDelta(out))
    }
}

/// The ids and digests of a served version, as a store keeps them for a replica that did not
/// serve it (or a process that restarted): about 20 bytes plus the id per entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DigestList {
    ids: Vec<String>,
    digests: Vec<EntryDigest>,
}

impl DigestedIds for DigestList {
    fn digests(&self) -> &[EntryDigest] {
        &self.digests
    }
    fn id_at(&self, i: usize) -> Option<&str> {
        self.ids.get(i).map(String::as_str)
    }
}

impl DigestList {
    /// The stored form of `snapshot`'s list: per entry its digest, the id's length (4 bytes,
    /// little-endian) and the id, in id order.
    pub fn encode(snapshot: &CatalogSnapshot) -> Vec<u8> {
        let entries = snapshot.entries();
        let mut out = Vec::with_capacity(entries.len() * 36);
        for (e, d) in entries.iter().zip(snapshot.digests()) {
            out.extend_from_slice(d);
            put_id(&mut out, &e.id);
        }
        out
    }

    /// Read back [`DigestList::encode`]'s form; anything else (ids out of order included) is a
    /// [`StoreError`].
    pub fn decode(mut bytes: &[u8]) -> StoreResult<Self> {
        let mut list = DigestList::default();
        while !bytes.is_empty() {
            list.digests.push(take_digest(&mut bytes)?);
            let id = take_id(&mut bytes)?;
            if list.ids.last().is_some_and(|last| *last >= id) {
                return Err(StoreError("a stored catalog list is out of order".into()));
            }
            list.ids.push(id);
        }
        Ok(list)
    }

    /// How many ids it holds.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether it holds no id.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

fn put_id(out: &mut Vec<u8>, id: &str) {
    out.extend_from_slice(&u32::try_from(id.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(id.as_bytes());
}

fn take<'a>(bytes: &mut &'a [u8], n: usize) -> StoreResult<&'a [u8]> {
    if bytes.len() < n {
        return Err(StoreError("a stored catalog delta or list is truncated".into()));
    }
    let (head, rest) = bytes.split_at(n);
    *bytes = rest;
    Ok(head)
}

fn take_digest(bytes: &mut &[u8]) -> StoreResult<EntryDigest> {
    let mut digest = EntryDigest::default();
    digest.copy_from_slice(take(bytes, 16)?);
    Ok(digest)
}

fn take_id(bytes: &mut &[u8]) -> StoreResult<String> {
    let mut len = [0u8; 4];
    len.copy_from_slice(take(bytes, 4)?);
    let len = usize::try_from(u32::from_le_bytes(len)).map_err(StoreError::from_display)?;
    String::from_utf8(take(bytes, len)?.to_vec()).map_err(StoreError::from_display)
}

/// The key a store keeps the delta between versions `a` and `b` under: the two tokens in order
/// (the delta is oriented from the first to the second), so `A→B` and `B→A` share one row.
pub fn pair_key<'a>(a: &'a str, b: &'a str) -> (&'a str, &'a str) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// The delta from `from` to `to` given the stored delta `stored` of their [`pair_key`].
pub fn oriented(stored: CatalogDelta, from: &str, to: &str) -> CatalogDelta {
    if from <= to {
        stored
    } else {
        stored.inverse()
    }
}

/// Where `since` and `current` lie in an owner's `chain` (its served versions, oldest first).
#[derive(Debug, PartialEq, Eq)]
pub enum ChainPath<'a> {
    /// `since` is not in the chain: unknown or forgotten.
    Unknown,
    /// `current` does not follow the last `since` in the chain: remember it, then look again.
    NotServed,
    /// The versions one after the other from the last `since` to the last `current`.
    Links(Vec<(&'a str, &'a str)>),
}

/// The [`ChainPath`] from `since` to `current` in `chain`.
pub fn chain_path<'a>(chain: &'a [String], since: &str, current: &str) -> ChainPath<'a> {
    let Some(from) = chain.iter().rposition(|v| v == since) else { return ChainPath::Unknown };
    match chain.iter().rposition(|v| v == current) {
        Some(to) if to > from => {
            ChainPath::Links(chain[from..=to].windows(2).map(|w| (w[0].as_str(), w[1].as_str())).collect())
        }
        _ => ChainPath::NotServed,
    }
}

impl<'a> ChainPath<'a> {
    /// The links to compose, or what a durable store answers without composing.
    pub fn links(self) -> Result<Vec<(&'a str, &'a str)>, Found> {
        match self {
            ChainPath::Unknown => Err(Found::Changes(None)),
            ChainPath::NotServed => Err(Found::NotServed),
            ChainPath::Links(links) => Ok(links),
        }
    }
}

/// The changes along `links`, each link's delta from `stored` (keyed by [`pair_key`]); `None`
/// when one is missing (then the baseline is as good as forgotten).
pub fn compose(
    links: &[(&str, &str)],
    stored: &HashMap<(String, String), CatalogDelta>,
) -> Option<Vec<(String, ChangeKind)>> {
    let mut total = CatalogDelta::default();
    for &(from, to) in links {
        let (lo, hi) = pair_key(from, to);
        let delta = stored.get(&(lo.to_owned(), hi.to_owned()))?.clone();
        total = total.then(oriented(delta, from, to));
    }
    Some(total.changes())
}

/// How many snapshots [`RecentSnapshots`] keeps per Language.
pub const RECENT_PER_LANGUAGE: usize = 4;

/// The snapshots this process served most recently, per Language (at most
/// [`RECENT_PER_LANGUAGE`] each, shared `Arc`s): the previous version's content when a durable
/// store computes the delta to the next one, without reading it back.
#[derive(Default)]
pub struct RecentSnapshots(Mutex<HashMap<String, VecDeque<Arc<CatalogSnapshot>>>>);

impl RecentSnapshots {
    /// The snapshot with token `version` of `language`, if still kept.
    pub fn get(&self, language: &str, version: &str) -> Option<Arc<CatalogSnapshot>> {
        let all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        all.get(language)?.iter().find(|s| s.version() == version).cloned()
    }

    /// Keep `snapshot` as the most recent of `language`.
    pub fn put(&self, language: &str, snapshot: &Arc<CatalogSnapshot>) {
        let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let recent = all.entry(language.to_owned()).or_default();
        recent.retain(|s| s.version() != snapshot.version());
        recent.push_back(snapshot.clone());
        while recent.len() > RECENT_PER_LANGUAGE {
            recent.pop_front();
        }
    }
}

/// What a durable store writes when `snapshot` follows `previous` in an owner's chain.
pub struct Remembered {
    /// The delta from `previous`, under its [`pair_key`] (oriented accordingly), unless stored.
    pub delta: Option<(String, String, Vec<u8>)>,
    /// The new version's [`DigestList`], unless stored.
    pub list: Option<Vec<u8>>,
}

/// What to write when `snapshot` follows `previous` in an owner's chain: the delta when its
/// content is given (the delta is not stored yet), the list unless `list_stored`.
pub fn to_remember(
    previous: Option<(&str, &Previous)>,
    snapshot: &CatalogSnapshot,
    list_stored: bool,
) -> Remembered {
    let delta = previous.map(|(version, old)| {
        let delta = match old {
            Previous::Cached(s) => CatalogDelta::between(&**s, snapshot),
            Previous::Stored(l) => CatalogDelta::between(l, snapshot),
        };
        let (lo, hi) = pair_key(version, snapshot.version());
        (lo.to_owned(), hi.to_owned(), oriented(delta, version, snapshot.version()).encode())
    });
    Remembered { delta, list: (!list_stored).then(|| DigestList::encode(snapshot)) }
}

/// The previous version's content: a snapshot this process served, or the stored list.
pub enum Previous {
    /// Kept in [`RecentSnapshots`].
    Cached(Arc<CatalogSnapshot>),
    /// Read back from the store.
    Stored(DigestList),
}

/// The SQL (SQLite and PostgreSQL alike) that forgets the deltas between versions no owner's
/// chain has one after the other: at most one per link of a chain remains.
pub const UNUSED_DELTAS: &str = "DELETE FROM pilotage_catalog_deltas AS d WHERE NOT EXISTS (
    SELECT 1 FROM pilotage_catalog_chain a JOIN pilotage_catalog_chain b
      ON b.owner = a.owner AND b.language = a.language AND b.seq = a.seq + 1
    WHERE a.language = d.language
      AND ((a.version = d.lo AND b.version = d.hi) OR (a.version = d.hi AND b.version = d.lo)))";

/// The SQL that forgets the lists of versions that are no owner's last (only a last one is ever
/// diffed against): at most one per chain remains.
pub const UNUSED_LISTS: &str = "DELETE FROM pilotage_catalog_lists AS l WHERE NOT EXISTS (
    SELECT 1 FROM pilotage_catalog_chain c
    WHERE c.language = l.language AND c.version = l.version
      AND c.seq = (SELECT MAX(seq) FROM pilotage_catalog_chain m WHERE m.owner = c.owner AND m.language = c.language))";

/// What a durable store found along an owner's chain.
pub enum Found {
    /// The changes (`None`: `since` is unknown or forgotten).
    Changes(Option<Vec<(String, ChangeKind)>>),
    /// `current` does not follow `since` in the chain (another session of the owner was served
    /// since, or the store forgot it): it must be remembered first.
    NotServed,
}

/// [`SharedState::catalog_changes`](super::SharedState::catalog_changes) for a durable store:
/// `look` composes along the chain; when `current` is not in it after `since`, `remember`
/// appends it (the owner is being served it) and `look` runs once more.
pub async fn changes_along<L, LF, R, RF>(
    since: &str,
    current: &CatalogSnapshot,
    mut look: L,
    remember: R,
) -> StoreResult<Option<Vec<(String, ChangeKind)>>>
where
    L: FnMut() -> LF,
    LF: std::future::Future<Output = StoreResult<Found>>,
    R: FnOnce() -> RF,
    RF: std::future::Future<Output = StoreResult<()>>,
{
    if since == current.version() {
        return Ok(Some(Vec::new()));
    }
    if let Found::Changes(changes) = look().await? {
        return Ok(changes);
    }
    remember().await?;
    match look().await? {
        Found::Changes(changes) => Ok(changes),
        Found::NotServed => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(n: u8) -> Option<EntryDigest> {
        Some([n; 16])
    }

    fn delta(entries: &[(&str, Option<EntryDigest>, Option<EntryDigest>)]) -> CatalogDelta {
        CatalogDelta(entries.iter().map(|&(id, old, new)| DeltaEntry { id: id.into(), old, new }).collect())
    }

    #[test]
    fn deltas_compose_per_id() {
        let added_then_removed = delta(&[("x", None, d(1))]).then(delta(&[("x", d(1), None)]));
        assert_eq!(added_then_removed, CatalogDelta::default(), "added then removed: nothing");
        let back = delta(&[("x", d(1), None)]).then(delta(&[("x", None, d(1))]));
        assert_eq!(back, CatalogDelta::default(), "removed then re-added the same: nothing");
        let other = delta(&[("x", d(1), None)]).then(delta(&[("x", None, d(2))]));
        assert_eq!(other.changes(), [("x".to_owned(), ChangeKind::Modified)], "re-added otherwise");
        let twice = delta(&[("x", d(1), d(2))]).then(delta(&[("x", d(2), d(3))]));
        assert_eq!(twice, delta(&[("x", d(1), d(3))]), "modified twice: first old, last new");
        let undone = delta(&[("x", d(1), d(2))]).then(delta(&[("x", d(2), d(1))]));
        assert_eq!(undone, CatalogDelta::default(), "modified and back: nothing");
        let gone = delta(&[("x", d(1), d(2))]).then(delta(&[("x", d(2), None)]));
        assert_eq!(gone.changes(), [("x".to_owned(), ChangeKind::Removed)]);
        let new = delta(&[("x", None, d(2))]).then(delta(&[("x", d(2), d(3))]));
        assert_eq!(new.changes(), [("x".to_owned(), ChangeKind::Added)]);
    }

    #[test]
    fn composition_keeps_ids_in_order() {
        let a = delta(&[("b", d(1), None), ("d", None, d(1))]);
        let b = delta(&[("a", None, d(2)), ("c", d(3), d(4)), ("d", d(1), d(5)), ("e", d(6), None)]);
        let ids: Vec<String> = a.then(b).changes().into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, ["a", "b", "c", "d", "e"]);
    }

    #[test]
    fn stored_forms_round_trip_and_refuse_damage() {
        let x = delta(&[("a", None, d(2)), ("é", d(3), d(4)), ("z", d(1), None)]);
        assert_eq!(CatalogDelta::decode(&x.encode()).unwrap(), x);
        assert_eq!(x.clone().inverse().inverse(), x);
        let bytes = x.encode();
        assert!(CatalogDelta::decode(&bytes[..bytes.len() - 1]).is_err(), "truncated");
        assert!(CatalogDelta::decode(&[3, 1, 2]).is_err(), "too short for its flags");
        assert!(DigestList::decode(&[0; 19]).is_err(), "no whole entry");
        let mut unordered = Vec::new();
        for id in ["b", "a"] {
            unordered.extend_from_slice(&[0; 16]);
            put_id(&mut unordered, id);
        }
        assert!(DigestList::decode(&unordered).is_err(), "out of order");
    }

    #[test]
    fn a_path_runs_from_the_last_since_to_the_last_current() {
        let chain: Vec<String> = ["A", "B", "A", "C"].map(String::from).to_vec();
        assert_eq!(chain_path(&chain, "A", "C"), ChainPath::Links(vec![("A", "C")]));
        assert_eq!(chain_path(&chain, "B", "C"), ChainPath::Links(vec![("B", "A"), ("A", "C")]));
        assert_eq!(chain_path(&chain, "C", "A"), ChainPath::NotServed);
        assert_eq!(chain_path(&chain, "D", "C"), ChainPath::Unknown);
        assert_eq!(chain_path(&chain, "B", "D"), ChainPath::NotServed);
    }
}
