//! The catalog snapshots recently served to one caller, so `changed_since` can diff against them.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use crate::engine::catalog::CatalogSnapshot;
use crate::model::catalog::{CatalogChange, CatalogChanges, ChangeKind};
use crate::model::errors::{ErrorKind, RequestError};

/// The snapshots recently served to one caller, so `changed_since` can diff against them.
#[derive(Debug, Default)]
pub struct History {
    recent: VecDeque<Arc<CatalogSnapshot>>,
}

/// How many past snapshots a [`History`] keeps.
pub const HISTORY_DEPTH: usize = 32;

impl History {
    /// Remember `snapshot` (no-op when its token is already the latest).
    pub fn remember(&mut self, snapshot: &Arc<CatalogSnapshot>) {
        if self.recent.back().is_some_and(|s| s.version() == snapshot.version()) {
            return;
        }
        self.recent.retain(|s| s.version() != snapshot.version());
        self.recent.push_back(snapshot.clone());
        while self.recent.len() > HISTORY_DEPTH {
            self.recent.pop_front();
        }
    }

    /// `changed_since`: the changes from the snapshot with token `since` to `current`.
    pub fn changed_since(
        &self,
        current: &CatalogSnapshot,
        since: &str,
    ) -> Result<CatalogChanges, RequestError> {
        let Some(old) = self.recent.iter().find(|s| s.version() == since) else {
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
}
