//! The revalidation cache (Part IV §6): the valid verdicts one session has seen for one
//! Language, so that execute's re-validation of a program validated moments before (the
//! standard loop) or already run is a look-up instead of a second engine call.
//!
//! A verdict is keyed by the SHA-256 of the program, the context and the `catalog_version` it
//! was judged against; the session fixes the caller and its engine (its world). Only valid
//! verdicts are kept: an invalid program is validated again, so its refusal carries its
//! diagnostics. The cache holds at most [`Limits::revalidation_cache`] keys, forgetting the
//! oldest first; with 0 (the default) it holds none and computes no key.
//!
//! [`Limits::revalidation_cache`]: crate::engine::Limits::revalidation_cache

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde_json::Value;

use crate::model::digest::sha256_json;

/// The key of one verdict: what the validation's answer depends on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct VerdictKey([u8; 32]);

impl VerdictKey {
    /// The key of `program` judged with `context` against the catalog `catalog_version`: the
    /// SHA-256 of the JSON array of the three, whose text tells every triple apart. A supplied
    /// context is wrapped in an array, so that `null` supplied is not taken for none.
    pub fn of(program: &Value, context: Option<&Value>, catalog_version: Option<&str>) -> Self {
        VerdictKey(sha256_json(&(catalog_version, context.map(|c| [c]), program)))
    }
}

/// One session's valid verdicts for one Language, at most `max` of them.
pub(crate) struct Verdicts {
    max: usize,
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    /// Each valid program's plan step count (`None` without a plan).
    planned: HashMap<VerdictKey, Option<usize>>,
    /// The keys, oldest first.
    order: VecDeque<VerdictKey>,
}

impl Verdicts {
    /// A cache of at most `max` verdicts; 0 keeps none.
    pub fn bounded(max: usize) -> Self {
        Verdicts { max, kept: Mutex::default() }
    }

    /// The key of `program` when this cache keeps verdicts, `None` (and no hashing) when not.
    pub fn key(
        &self,
        program: &Value,
        context: Option<&Value>,
        catalog_version: Option<&str>,
    ) -> Option<VerdictKey> {
        (self.max > 0).then(|| VerdictKey::of(program, context, catalog_version))
    }

    /// The plan step count of a program remembered valid under `key`.
    pub fn valid(&self, key: &VerdictKey) -> Option<Option<usize>> {
        self.lock().planned.get(key).copied()
    }

    /// Remembers that the program under `key` is valid, forgetting the oldest verdict past the
    /// bound.
    pub fn remember(&self, key: VerdictKey, planned: Option<usize>) {
        if self.max == 0 {
            return;
        }
        let mut kept = self.lock();
        if kept.planned.insert(key.clone(), planned).is_some() {
            return;
        }
        kept.order.push_back(key);
        while kept.order.len() > self.max {
            if let Some(oldest) = kept.order.pop_front() {
                kept.planned.remove(&oldest);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::state::verdicts::{VerdictKey, Verdicts};

    #[test]
    fn the_key_tells_every_part_apart() {
        let p = json!({"steps": [1, 2]});
        let base = VerdictKey::of(&p, None, None);
        assert_eq!(base, VerdictKey::of(&json!({"steps": [1, 2]}), None, None));
        let others = [
            VerdictKey::of(&json!({"steps": [1, 3]}), None, None),
            VerdictKey::of(&p, Some(&json!({})), None),
            VerdictKey::of(&p, Some(&json!(null)), None),
            VerdictKey::of(&p, None, Some("cat_1")),
            VerdictKey::of(&p, None, Some("")),
            VerdictKey::of(&p, Some(&json!({"tz": "UTC"})), Some("cat_1")),
            VerdictKey::of(&p, Some(&json!({"tz": "UTC"})), Some("cat_2")),
        ];
        for (i, k) in others.iter().enumerate() {
            assert_ne!(*k, base, "{i}");
            for (j, l) in others.iter().enumerate().skip(i + 1) {
                assert_ne!(k, l, "{i} {j}");
            }
        }
    }

    #[test]
    fn a_bounded_cache_forgets_the_oldest_and_an_empty_one_keeps_nothing() {
        let key = |i: i32| VerdictKey::of(&json!(i), None, None);
        let cache = Verdicts::bounded(2);
        cache.remember(key(1), Some(1));
        cache.remember(key(2), None);
        cache.remember(key(1), Some(1));
        assert_eq!(cache.valid(&key(1)), Some(Some(1)));
        assert_eq!(cache.valid(&key(2)), Some(None));
        cache.remember(key(3), Some(3));
        assert_eq!(cache.valid(&key(1)), None, "the oldest is forgotten past the bound");
        assert_eq!(cache.valid(&key(2)), Some(None));
        assert_eq!(cache.valid(&key(3)), Some(Some(3)));
        let off = Verdicts::bounded(0);
        assert_eq!(off.key(&json!(1), None, None), None);
        off.remember(key(1), None);
        assert_eq!(off.valid(&key(1)), None);
    }
}
