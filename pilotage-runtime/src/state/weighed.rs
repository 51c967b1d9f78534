//! [`Weighed`]: a map whose entries each hold some bytes of memory, with their total kept as
//! entries come and go, so that a bound on the total is checked without walking the map.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;

/// A map of entries, each with the bytes it holds, and their total.
pub(crate) struct Weighed<K, V> {
    entries: HashMap<K, (V, usize)>,
    bytes: usize,
}

impl<K, V> Default for Weighed<K, V> {
    fn default() -> Self {
        Weighed { entries: HashMap::new(), bytes: 0 }
    }
}

impl<K: Eq + Hash, V> Weighed<K, V> {
    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The bytes all entries hold.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The entry of `k`.
    pub fn get<Q: Hash + Eq + ?Sized>(&self, k: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.entries.get(k).map(|(v, _)| v)
    }

    /// The entry of `k`, to change in ways that do not change the bytes it holds.
    pub fn get_mut<Q: Hash + Eq + ?Sized>(&mut self, k: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
    {
        self.entries.get_mut(k).map(|(v, _)| v)
    }

    /// Every entry, with the bytes it holds.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V, usize)> {
        self.entries.iter().map(|(k, (v, b))| (k, v, *b))
    }

    /// Put `v`, holding `bytes`, under `k`; the entry it replaces, if any.
    pub fn insert(&mut self, k: K, v: V, bytes: usize) -> Option<V> {
        self.bytes = self.bytes.saturating_add(bytes);
        let (old, freed) = self.entries.insert(k, (v, bytes))?;
        self.bytes -= freed;
        Some(old)
    }

    /// Take the entry of `k` out.
    pub fn remove<Q: Hash + Eq + ?Sized>(&mut self, k: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let (v, freed) = self.entries.remove(k)?;
        self.bytes -= freed;
        Some(v)
    }

    /// Keep the entries `keep` says to keep.
    pub fn retain(&mut self, mut keep: impl FnMut(&V) -> bool) {
        let mut freed = 0;
        self.entries.retain(|_, (v, b)| {
            let kept = keep(v);
            if !kept {
                freed += *b;
            }
            kept
        });
        self.bytes -= freed;
    }
}

#[cfg(test)]
mod tests {
    use super::Weighed;

    #[test]
    fn the_total_follows_inserts_replacements_removals_and_retains() {
        let mut m = Weighed::default();
        assert_eq!(m.insert("a", 1, 10), None);
        assert_eq!(m.insert("b", 2, 5), None);
        assert_eq!(m.bytes(), 15);
        assert_eq!(m.insert("a", 3, 4), Some(1));
        assert_eq!((m.bytes(), m.len()), (9, 2));
        assert_eq!(m.remove(&"b"), Some(2));
        assert_eq!(m.remove(&"b"), None);
        assert_eq!(m.bytes(), 4);
        m.insert("c", 7, 6);
        m.retain(|v| *v != 3);
        assert_eq!((m.bytes(), m.len(), m.get(&"c")), (6, 1, Some(&7)));
        assert!(m.iter().all(|(k, v, b)| (*k, *v, b) == ("c", 7, 6)));
        m.retain(|_| false);
        assert!(m.is_empty() && m.bytes() == 0);
    }
}
