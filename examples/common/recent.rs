//! The most recent values by key, bounded in count: keeping a value for a key already kept
//! replaces it, and when the list is full the oldest goes first. Shared by the `sql` example
//! (the checks its runs reuse) and the `gate` example (the validations its executes are gated
//! on).
//!
//! Each example includes it with `#[path = "../common/recent.rs"] mod recent;` (adjusted to
//! its depth).

// A server or test that hosts several engines includes this file once per engine.
#![allow(clippy::duplicate_mod)]

use std::collections::VecDeque;
use std::sync::Mutex;

/// At most `capacity` values, newest last.
pub struct Recent<K, V> {
    capacity: usize,
    kept: Mutex<VecDeque<(K, V)>>,
}

impl<K: PartialEq, V: Clone> Recent<K, V> {
    /// An empty list that keeps at most `capacity` values (none when it is 0).
    pub fn new(capacity: usize) -> Self {
        Recent { capacity, kept: Mutex::new(VecDeque::new()) }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, VecDeque<(K, V)>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keep `value` for `key`, in place of any value kept for it, dropping the oldest values
    /// beyond the capacity.
    pub fn keep(&self, key: K, value: V) {
        let mut kept = self.kept();
        kept.retain(|(k, _)| *k != key);
        while kept.len() >= self.capacity && kept.pop_front().is_some() {}
        if self.capacity > 0 {
            kept.push_back((key, value));
        }
    }

    /// The newest value whose key `matches` (a look-up that borrows what it compares, where
    /// building a key would copy it).
    pub fn find(&self, matches: impl Fn(&K) -> bool) -> Option<V> {
        self.kept().iter().rev().find(|(k, _)| matches(k)).map(|(_, v)| v.clone())
    }
}
