//! The one cached catalog snapshot of an engine whose callers all see the same entries: built
//! on first use, dropped after a catalog change.
//!
//! Each engine's `mod.rs` includes it with
//! `#[path = "../../common/snapshot_cache.rs"] mod snapshot_cache;`.

// A server or test that hosts several engines includes this file once per engine.
#![allow(clippy::duplicate_mod)]

use std::sync::{Arc, Mutex, MutexGuard};

use pilotage::engine::CatalogSnapshot;

/// Lock order: the cache, then the world (while building); a change releases the world before
/// it takes the cache.
#[derive(Default)]
pub struct SnapshotCache(Mutex<Option<Arc<CatalogSnapshot>>>);

impl SnapshotCache {
    fn slot(&self) -> MutexGuard<'_, Option<Arc<CatalogSnapshot>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached snapshot, or the one `build` makes (then cached).
    pub fn get_or_build(&self, build: impl FnOnce() -> CatalogSnapshot) -> Arc<CatalogSnapshot> {
        let mut cache = self.slot();
        if let Some(s) = cache.as_ref() {
            return s.clone();
        }
        let snapshot = Arc::new(build());
        *cache = Some(snapshot.clone());
        snapshot
    }

    /// Drop the cached snapshot (the next caller rebuilds it).
    pub fn clear(&self) {
        *self.slot() = None;
    }

    /// Apply the catalog change `f` to `world`, then drop the cached snapshot when it succeeded
    /// (the world lock is released before the cache lock is taken).
    pub fn change<W, T, E>(&self, world: &Mutex<W>, f: impl FnOnce(&mut W) -> Result<T, E>) -> Result<T, E> {
        let result = f(&mut world.lock().unwrap_or_else(|p| p.into_inner()));
        if result.is_ok() {
            self.clear();
        }
        result
    }
}
