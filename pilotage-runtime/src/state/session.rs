//! One MCP session's private state: its caller identity, its own engine instances (its own
//! world), its `"session"`-retention run store and its catalog histories.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::catalog_history::History;
use super::promotions::{Promoted, Promotions};
use super::runs::MemoryRunStore;
use crate::engine::{Caller, CatalogSnapshot, Engine, SubProgram};

pub(crate) struct Session {
    pub caller: Caller,
    /// No MCP session binds these requests (stateless 2026-07-28): nothing can be retained
    /// under `"session"` retention.
    pub stateless: bool,
    pub engines: Vec<Arc<dyn Engine>>,
    pub runs: MemoryRunStore,
    histories: Vec<Mutex<History>>,
    promotions: Vec<Mutex<Promotions>>,
}

impl Session {
    pub fn new(caller: Caller, engines: Vec<Arc<dyn Engine>>, stateless: bool) -> Self {
        let histories = engines.iter().map(|_| Mutex::new(History::default())).collect();
        let promotions = engines.iter().map(|_| Mutex::new(Promotions::default())).collect();
        Session { caller, stateless, engines, runs: MemoryRunStore::default(), histories, promotions }
    }

    /// The caller's current snapshot of Language `lang` (the engine's entries plus this
    /// session's promoted programs), remembered for `changed_since`.
    pub fn snapshot(&self, lang: usize) -> Option<Arc<CatalogSnapshot>> {
        let engine = self.engines.get(lang)?.catalog_snapshot(&self.caller)?;
        let snap = self.promotions.get(lang)?.lock().unwrap_or_else(|p| p.into_inner()).merge(engine);
        if let Some(h) = self.histories.get(lang) {
            h.lock().unwrap_or_else(|p| p.into_inner()).remember(&snap);
        }
        Some(snap)
    }

    pub fn history(&self, lang: usize) -> Option<std::sync::MutexGuard<'_, History>> {
        self.histories.get(lang).map(|h| h.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn promote(&self, lang: usize, p: Promoted) -> Option<Arc<Promoted>> {
        Some(self.promotions.get(lang)?.lock().unwrap_or_else(|p| p.into_inner()).add(p))
    }

    pub fn promoted(&self, lang: usize, reference: &str) -> Option<Arc<Promoted>> {
        self.promotions.get(lang)?.lock().unwrap_or_else(|p| p.into_inner()).get(reference)
    }

    pub fn promoted_bodies(
        &self,
        lang: usize,
        snapshot: Option<&CatalogSnapshot>,
    ) -> std::collections::BTreeMap<String, SubProgram> {
        self.promotions
            .get(lang)
            .map(|p| p.lock().unwrap_or_else(|p| p.into_inner()).bodies(snapshot))
            .unwrap_or_default()
    }
}

/// The worlds of principals without an MCP session (stateless 2026-07-28 requests), one per
/// principal.
#[derive(Default)]
pub(crate) struct StatelessSessions {
    by_principal: Mutex<HashMap<String, Arc<Session>>>,
}

impl StatelessSessions {
    /// The session of `principal`, made with `engines` on first use.
    pub fn get_or_create(
        &self,
        principal: String,
        engines: impl FnOnce() -> Vec<Arc<dyn Engine>>,
    ) -> Arc<Session> {
        let mut map = self.by_principal.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(principal.clone())
            .or_insert_with(|| Arc::new(Session::new(Caller::new(principal), engines(), true)))
            .clone()
    }
}
