//! One MCP session's private state: its caller identity, its own engine instances (its own
//! world), its `"session"`-retention run store, and the scope where its promotions, served
//! catalogs and idempotency keys live.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::promotions::{self, Promoted};
use super::runs::MemoryRunStore;
use super::shared::{SharedState, StoreError, StoreResult, Stored};
use super::verdicts::Verdicts;
use crate::engine::{Caller, CatalogSnapshot, Engine, Limits};
use crate::model::catalog::ChangeKind;

pub(crate) struct Session {
    pub caller: Caller,
    /// No MCP session binds these requests (stateless 2026-07-28): nothing can be retained
    /// under `"session"` retention.
    pub stateless: bool,
    pub engines: Vec<Arc<dyn Engine>>,
    /// The `"session"`-retention records, one bounded store per Language.
    pub runs: Vec<MemoryRunStore>,
    /// Where this caller's promotions, served catalogs and idempotency keys live: the
    /// deployment's store for an identity that outlives the session, a private memory store for
    /// one that lives only as long as the session.
    pub scope: Arc<dyn SharedState>,
    /// The valid verdicts this session's engines gave, one bounded cache per Language.
    pub verdicts: Vec<Verdicts>,
    cache: Vec<Mutex<LangCache>>,
}

/// What a session remembers of one Language to spare the store: promotions are immutable, so a
/// compiled one never goes stale; the last snapshot token it told the store about; the last
/// merged snapshot.
#[derive(Default)]
struct LangCache {
    compiled: HashMap<String, Arc<Promoted>>,
    remembered: Option<String>,
    merged: Option<(String, Vec<String>, Arc<CatalogSnapshot>)>,
}

impl Session {
    pub fn new(
        caller: Caller,
        engines: Vec<Arc<dyn Engine>>,
        stateless: bool,
        limits: &[Limits],
        scope: Arc<dyn SharedState>,
    ) -> Self {
        let runs = limits
            .iter()
            .map(|l| MemoryRunStore::bounded(l.max_retained_runs, l.max_retained_bytes))
            .collect();
        let verdicts = limits.iter().map(|l| Verdicts::bounded(l.revalidation_cache)).collect();
        let cache = engines.iter().map(|_| Mutex::default()).collect();
        Session { caller, stateless, engines, runs, scope, verdicts, cache }
    }

    fn language(&self, lang: usize) -> &'static str {
        self.engines.get(lang).map_or("", |e| e.language_spec().name)
    }

    fn cache(&self, lang: usize) -> Option<MutexGuard<'_, LangCache>> {
        self.cache.get(lang).map(|c| c.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The caller's promotions of Language `lang`, oldest first. A kept promotion's
    /// `input_schema` is an agent's: one this process has not compiled yet is compiled on the
    /// blocking pool (bounded by the schema check's work bound), never on the async workers nor
    /// under the cache's lock.
    pub async fn promoted_all(&self, lang: usize) -> StoreResult<Vec<Arc<Promoted>>> {
        let kept = self.scope.promotions(&self.caller.id, self.language(lang)).await?;
        let mut order = Vec::with_capacity(kept.len());
        let mut missing = Vec::new();
        {
            let Some(cache) = self.cache(lang) else { return Ok(Vec::new()) };
            for (reference, record) in kept {
                if !cache.compiled.contains_key(&reference) {
                    missing.push((reference.clone(), record));
                }
                order.push(reference);
            }
        }
        if !missing.is_empty() {
            let compile = move || {
                missing.into_iter().map(|(r, record)| (r, Promoted::from_record(record))).collect::<Vec<_>>()
            };
            let compiled = tokio::task::spawn_blocking(compile).await.unwrap_or_else(|e| {
                tracing::error!(error = %e, "compiling kept promotions failed");
                Vec::new()
            });
            let Some(mut cache) = self.cache(lang) else { return Ok(Vec::new()) };
            for (reference, promoted) in compiled {
                match promoted {
                    Ok(p) => {
                        cache.compiled.insert(reference, Arc::new(p));
                    }
                    Err(e) => tracing::error!(reference, error = %e, "skipping an unreadable promotion"),
                }
            }
        }
        let Some(cache) = self.cache(lang) else { return Ok(Vec::new()) };
        Ok(order.iter().filter_map(|r| cache.compiled.get(r).cloned()).collect())
    }

    /// The caller's snapshot of Language `lang` from the engine's: plus the caller's promoted
    /// programs, and remembered in the store for `changed_since`.
    pub async fn snapshot(
        &self,
        lang: usize,
        engine: Arc<CatalogSnapshot>,
        promoted: &[Arc<Promoted>],
    ) -> StoreResult<Arc<CatalogSnapshot>> {
        let (snap, tell) = {
            let Some(mut cache) = self.cache(lang) else { return Ok(engine) };
            let snap = match &cache.merged {
                Some((v, r, s)) if v == engine.version() && same_programs(r, promoted) => s.clone(),
                _ => {
                    let snap = promotions::merge(engine.clone(), promoted);
                    let refs = promoted.iter().map(|p| p.entry.id.clone()).collect();
                    cache.merged = Some((engine.version().to_owned(), refs, snap.clone()));
                    snap
                }
            };
            let tell = cache.remembered.as_deref() != Some(snap.version());
            (snap, tell)
        };
        if tell {
            self.scope.remember_catalog(&self.caller.id, self.language(lang), &snap).await?;
            if let Some(mut cache) = self.cache(lang) {
                cache.remembered = Some(snap.version().to_owned());
            }
        }
        Ok(snap)
    }

    /// What [`Session::snapshot`] answers for `promoted` while the engine's snapshot is still of
    /// the version this returns: the merged snapshot it answered last, when that one is
    /// remembered in the store and was merged with the same promoted programs. A Run may take it
    /// without a snapshot call of its own, checking the engine's version as it begins.
    pub fn last_snapshot(
        &self,
        lang: usize,
        promoted: &[Arc<Promoted>],
    ) -> Option<(String, Arc<CatalogSnapshot>)> {
        let cache = self.cache(lang)?;
        let (version, refs, snap) = cache.merged.as_ref()?;
        let kept = cache.remembered.as_deref() == Some(snap.version());
        (kept && same_programs(refs, promoted)).then(|| (version.clone(), snap.clone()))
    }

    /// The changes from the version `since` served to this caller to `current` (the snapshot
    /// just served), `None` when `since` is unknown or forgotten, as the store answers it (at
    /// once when the tokens match).
    pub async fn changes_since(
        &self,
        lang: usize,
        since: &str,
        current: &Arc<CatalogSnapshot>,
    ) -> StoreResult<Option<Vec<(String, ChangeKind)>>> {
        self.scope.catalog_changes(&self.caller.id, self.language(lang), since, current).await
    }

    /// Keep `p` for this caller; `None` when the caller already holds `max` promotions.
    pub async fn promote(&self, lang: usize, p: Promoted, max: usize) -> StoreResult<Option<Arc<Promoted>>> {
        let reference = p.entry.id.clone();
        let stored = self
            .scope
            .put_promotion(&self.caller.id, self.language(lang), &reference, &p.record(), max)
            .await?;
        if stored == Stored::Full {
            return Ok(None);
        }
        let p = Arc::new(p);
        let mut cache = self.cache(lang).ok_or_else(|| StoreError("no such Language".into()))?;
        Ok(Some(cache.compiled.entry(reference).or_insert(p).clone()))
    }

    /// The caller's promotion `reference`, if it has one.
    pub async fn promoted(&self, lang: usize, reference: &str) -> StoreResult<Option<Arc<Promoted>>> {
        if let Some(p) = self.cache(lang).and_then(|c| c.compiled.get(reference).cloned()) {
            return Ok(Some(p));
        }
        Ok(self.promoted_all(lang).await?.into_iter().find(|p| p.entry.id == reference))
    }
}

/// Whether a merged snapshot's promoted references are `promoted`'s, in the same order.
fn same_programs(refs: &[String], promoted: &[Arc<Promoted>]) -> bool {
    refs.len() == promoted.len() && refs.iter().zip(promoted).all(|(r, p)| *r == p.entry.id)
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
        scope: &Arc<dyn SharedState>,
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
        let session = Arc::new(Session::new(caller, engines(), true, limits, scope.clone()));
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
        let scope: Arc<dyn SharedState> = Arc::new(crate::state::MemoryState::default());
        for p in ["a", "b", "c"] {
            table.get_or_create(Caller::new(p), Vec::new, &limits, &scope);
        }
        table.get_or_create(Caller::new("a"), Vec::new, &limits, &scope); // a is now the most recent
        let d = table.get_or_create(Caller::new("d"), Vec::new, &limits, &scope);
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
        let scope: Arc<dyn SharedState> = Arc::new(crate::state::MemoryState::default());
        table.get_or_create(Caller::new("a"), Vec::new, &limits, &scope);
        table.get_or_create(Caller::new("b"), Vec::new, &limits, &scope);
        table.get_or_create(Caller::new("c"), Vec::new, &limits, &scope);
        assert_eq!(table.len(), 1, "every idle principal was forgotten to make room");
    }
}
