//! The `q` index of a [`CatalogSnapshot`](super::catalog::CatalogSnapshot): `list` with `q`
//! keeps the entries whose id, name, description or a tag contains `q`, ignoring case. Every
//! three-byte sequence (trigram) of each lowercased field maps to the entries that contain it,
//! so a query of three bytes or more looks at the entries holding all of its trigrams (none, when
//! one trigram is absent) instead of scanning the catalog; shorter queries scan.

use std::collections::HashMap;

use crate::model::catalog::CatalogEntry;

/// Queries shorter than this many bytes (lowercased) scan the snapshot.
pub const MIN_INDEXED_QUERY: usize = 3;

/// Trigram → the positions (in id order) of the entries containing it.
#[derive(Clone, Debug, Default)]
pub struct SearchIndex {
    postings: HashMap<u32, Vec<u32>>,
}

/// Whether `entry`'s id, name, description or one of its tags contains `lowered` (a lowercased
/// query), ignoring case.
pub fn contains_text(entry: &CatalogEntry, lowered: &str) -> bool {
    fields(entry).any(|f| f.to_lowercase().contains(lowered))
}

fn fields(entry: &CatalogEntry) -> impl Iterator<Item = &str> {
    [Some(&entry.id), Some(&entry.name), entry.description.as_ref()]
        .into_iter()
        .flatten()
        .chain(&entry.tags)
        .map(String::as_str)
}

/// The trigrams of `text`, packed in a `u32` each.
fn trigrams(text: &[u8]) -> impl Iterator<Item = u32> + '_ {
    text.windows(3).map(|w| u32::from(w[0]) << 16 | u32::from(w[1]) << 8 | u32::from(w[2]))
}

impl SearchIndex {
    /// Index `entries` (sorted by id; a snapshot of more than `u32::MAX` entries scans instead).
    pub fn build(entries: &[CatalogEntry]) -> Self {
        let mut postings: HashMap<u32, Vec<u32>> = HashMap::new();
        let mut grams = Vec::new();
        for (position, entry) in entries.iter().enumerate() {
            let Ok(position) = u32::try_from(position) else { break };
            grams.clear();
            for field in fields(entry) {
                grams.extend(trigrams(field.to_lowercase().as_bytes()));
            }
            grams.sort_unstable();
            grams.dedup();
            for gram in &grams {
                postings.entry(*gram).or_default().push(position);
            }
        }
        // Lists grew by doubling: give back the unused half, kept as long as the snapshot.
        for list in postings.values_mut() {
            list.shrink_to_fit();
        }
        SearchIndex { postings }
    }

    /// The posting lists of every trigram of `lowered` (a lowercased query of at least
    /// [`MIN_INDEXED_QUERY`] bytes), shortest first; none when a trigram is in no entry. The
    /// entries containing `lowered` are among those in every list.
    pub fn lists(&self, lowered: &str) -> Vec<&[u32]> {
        let mut grams: Vec<u32> = trigrams(lowered.as_bytes()).collect();
        grams.sort_unstable();
        grams.dedup();
        let mut lists = Vec::with_capacity(grams.len());
        for gram in grams {
            match self.postings.get(&gram) {
                Some(list) => lists.push(list.as_slice()),
                None => return Vec::new(),
            }
        }
        lists.sort_by_key(|l| l.len());
        lists
    }
}

/// Positions from `from` on, in id order, that are in every one of `lists` (shortest first),
/// produced lazily so a page stops as soon as it is full.
pub fn intersect<'a>(lists: Vec<&'a [u32]>, from: usize) -> impl Iterator<Item = usize> + 'a {
    let (first, others) = match lists.split_first() {
        Some((first, others)) => (*first, others.to_vec()),
        None => (&[][..], Vec::new()),
    };
    let start = first.partition_point(|p| (*p as usize) < from);
    first[start..]
        .iter()
        .filter(move |p| others.iter().all(|l| l.binary_search(p).is_ok()))
        .map(|p| *p as usize)
}
