//! `changed_since`: the difference between a snapshot served to the caller earlier (kept by the
//! [`SharedState`](super::SharedState)) and the current one.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::engine::catalog::CatalogSnapshot;
use crate::model::catalog::{CatalogChange, CatalogChanges, ChangeKind};
use crate::model::errors::{ErrorKind, RequestError};

/// `changed_since`: the changes from `old` (the snapshot with token `since` served to the
/// caller, if still remembered) to `current`.
pub fn changed_since(
    old: Option<&CatalogSnapshot>,
    current: &CatalogSnapshot,
    since: &str,
) -> Result<CatalogChanges, RequestError> {
    let Some(old) = old.filter(|s| s.version() == since) else {
        return Err(RequestError::new(
            ErrorKind::UnknownBaseline,
            "cannot compute changes from that catalog_version: list the catalog again",
        )
        .with_catalog_version(current.version()));
    };
    let before: BTreeMap<&str, Value> =
        old.entries().iter().map(|e| (e.id.as_str(), e.versioned_form())).collect();
    let after: BTreeMap<&str, Value> =
        current.entries().iter().map(|e| (e.id.as_str(), e.versioned_form())).collect();
    let mut changes = Vec::new();
    for (id, form) in &after {
        match before.get(id) {
            None => changes.push((id, ChangeKind::Added)),
            Some(old) if old != form => changes.push((id, ChangeKind::Modified)),
            _ => {}
        }
    }
    for id in before.keys().filter(|id| !after.contains_key(*id)) {
        changes.push((id, ChangeKind::Removed));
    }
    changes.sort_by(|a, b| a.0.cmp(b.0));
    Ok(CatalogChanges {
        catalog_version: current.version().to_owned(),
        changes: changes
            .into_iter()
            .map(|(id, change)| CatalogChange { id: (*id).to_owned(), change })
            .collect(),
    })
}
