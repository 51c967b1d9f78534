//! `changed_since`: the difference between a snapshot served to the caller earlier (kept by the
//! [`SharedState`](super::SharedState)) and the current one, proportional to the changes
//! ([`CatalogSnapshot::changes_to`]).

use crate::engine::catalog::CatalogSnapshot;
use crate::model::catalog::{CatalogChange, CatalogChanges};
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
    Ok(CatalogChanges {
        catalog_version: current.version().to_owned(),
        changes: old
            .changes_to(current)
            .into_iter()
            .map(|(id, change)| CatalogChange { id: id.to_owned(), change })
            .collect(),
    })
}
