//! Names: member lookups in instances and schemas, and JSON Pointer tokens.

use serde_json::{Map, Value};

/// Up to this many names, a lookup compares them one by one; past it, it searches.
const SCANNED: usize = 12;

/// The schema of member `name` in sorted `properties`.
pub(super) fn property(props: &[(String, usize)], name: &str) -> Option<usize> {
    if props.len() <= SCANNED {
        return props.iter().find(|(p, _)| same(p, name)).map(|(_, id)| *id);
    }
    props.binary_search_by(|(p, _)| p.as_str().cmp(name)).ok().and_then(|i| props.get(i)).map(|(_, id)| *id)
}

/// Whether `name` is among the sorted `known` names.
pub(super) fn is_known(known: &[String], name: &str) -> bool {
    if known.len() <= SCANNED {
        return known.iter().any(|k| same(k, name));
    }
    known.binary_search_by(|k| k.as_str().cmp(name)).is_ok()
}

/// Whether `members` has `name`: by comparing names for a small object (cheaper than hashing
/// the name), by hash for a large one.
pub(super) fn has(members: &Map<String, Value>, name: &str) -> bool {
    if members.len() <= 2 * SCANNED {
        members.keys().any(|key| same(key, name))
    } else {
        members.contains_key(name)
    }
}

/// Equality of two names, compared in place when short (a library call costs more than the
/// comparison itself).
pub(super) fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    if a.len() > 32 {
        return a == b;
    }
    a.iter().zip(b).all(|(x, y)| x == y)
}

/// A reference token escaped for a JSON Pointer.
pub(super) fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// `pointer` extended by one reference token.
pub(super) fn child(pointer: &str, token: &str) -> String {
    format!("{pointer}/{}", escape(token))
}

pub(super) fn must(at: &str, what: &str) -> String {
    format!("#{at} must be {what}")
}
