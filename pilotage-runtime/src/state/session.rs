//! One MCP session's private state: its caller identity, its own engine instances (its own
//! world), its `"session"`-retention run store and its catalog histories.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::catalog_history::History;
use super::promotions::{Promoted, Promotions};
use super::runs::MemoryRunStore;
use crate::engine::{Caller, CatalogSnapshot, Engine, Limits, SubProgram};

pub(crate) struct Session {
    pub caller: Caller,
    /// No MCP session binds these requests (stateless 2026-07-28): nothing can be retained
    /// under `"session"` retention.
    pub stateless: bool,
    pub engines: Vec<Arc<dyn Engine>>,
    /// The `"session"`-retention records, one bounded store per Language.
    pub runs: Vec<MemoryRunStore>,
    histories: Vec<Mutex<History>>,
    promotions: Vec<Mutex<Promotions>>,
}

impl Session {
    pub fn new(caller: Caller, engines: Vec<Arc<dyn Engine>>, stateless: bool, limits: &[Limits]) -> Self {
        let runs = limits
            .iter()
            .map(|l| MemoryRunStore::bounded(l.max_retained_runs, l.max_retained_bytes))
            .collect();
        let histories = engines.iter().map(|_| Mutex::new(History::default())).collect();
        let promotions = engines.iter().map(|_| Mutex::new(Promotions::default())).collect();
        Session { caller, stateless, engines, runs, histories, promotions }
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

/// The worlds of callers without an MCP session (stateless 2026-07-28 requests), one per
/// caller id, bounded: at most `max` callers, each forgotten after `idle` without a request;
/// past the cap the least recently used one is forgotten first. A world keeps the caller (and
/// claims) of the request that made it.
pub(crate) struct StatelessSessions {
    max: usize,
    idle: Duration,
    by_principal: Mutex<HashMap<String, (Arc<Session>, Instant)>>,
}

impl StatelessSessions {
    /// A table of at most `max` principals, each kept while used within `idle`.
    pub fn new(max: usize, idle: Duration) -> Self {
        StatelessSessions { max: max.max(1), idle, by_principal: Mutex::default() }
    }

    /// The session of `caller` (by id), made with `engines` on first use.
    pub fn get_or_create(
        &self,
        caller: Caller,
        engines: impl FnOnce() -> Vec<Arc<dyn Engine>>,
        limits: &[Limits],
    ) -> Arc<Session> {
        let mut map = self.by_principal.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if let Some((session, used)) = map.get_mut(&*caller.id) {
            *used = now;
            return session.clone();
        }
        if map.len() >= self.max {
            map.retain(|_, (_, used)| now.duration_since(*used) < self.idle);
        }
        while map.len() >= self.max {
            let Some(oldest) = map.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k.clone()) else {
                break;
            };
            map.remove(&oldest);
        }
        let id = caller.id.to_string();
        let session = Arc::new(Session::new(caller, engines(), true, limits));
        map.insert(id, (session.clone(), now));
        session
    }

    /// How many principals are held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_principal.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stateless_principals_are_bounded_least_recently_used_first() {
        let table = StatelessSessions::new(3, Duration::from_secs(600));
        let limits = [Limits::default()];
        for p in ["a", "b", "c"] {
            table.get_or_create(Caller::new(p), Vec::new, &limits);
        }
        table.get_or_create(Caller::new("a"), Vec::new, &limits); // a is now the most recent
        let d = table.get_or_create(Caller::new("d"), Vec::new, &limits);
        assert_eq!(table.len(), 3);
        assert_eq!(&*d.caller.id, "d");
        // b was the least recently used: it was forgotten, a was kept.
        let map = table.by_principal.lock().unwrap();
        let mut held: Vec<&str> = map.keys().map(String::as_str).collect();
        held.sort();
        assert_eq!(held, ["a", "c", "d"]);
    }

    #[test]
    fn idle_principals_are_forgotten_before_busy_ones() {
        let table = StatelessSessions::new(2, Duration::from_millis(0));
        let limits = [Limits::default()];
        table.get_or_create(Caller::new("a"), Vec::new, &limits);
        table.get_or_create(Caller::new("b"), Vec::new, &limits);
        table.get_or_create(Caller::new("c"), Vec::new, &limits);
        assert_eq!(table.len(), 1, "every idle principal was forgotten to make room");
    }
}
