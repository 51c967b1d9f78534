//! One MCP session's private state: its caller identity, its own engine instances (its own
//! world), its `"session"`-retention run store and its catalog histories.

use std::sync::{Arc, Mutex};

use crate::catalog::{CatalogSnapshot, History};
use crate::language::{Caller, Engine};
use crate::trace::MemoryRunStore;

pub(crate) struct Session {
    pub caller: Caller,
    pub engines: Vec<Arc<dyn Engine>>,
    pub runs: MemoryRunStore,
    histories: Vec<Mutex<History>>,
}

impl Session {
    pub fn new(caller: Caller, engines: Vec<Arc<dyn Engine>>) -> Self {
        let histories = engines.iter().map(|_| Mutex::new(History::default())).collect();
        Session {
            caller,
            engines,
            runs: MemoryRunStore::default(),
            histories,
        }
    }

    /// The caller's current snapshot of Language `lang`, remembered for `changed_since`.
    pub fn snapshot(&self, lang: usize) -> Option<Arc<CatalogSnapshot>> {
        let snap = self.engines.get(lang)?.catalog_snapshot(&self.caller)?;
        if let Some(h) = self.histories.get(lang) {
            h.lock().unwrap_or_else(|p| p.into_inner()).remember(&snap);
        }
        Some(snap)
    }

    pub fn history(&self, lang: usize) -> Option<std::sync::MutexGuard<'_, History>> {
        self.histories
            .get(lang)
            .map(|h| h.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
