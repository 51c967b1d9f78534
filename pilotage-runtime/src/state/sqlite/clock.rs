//! The SQLite store's clock (milliseconds since the epoch, as SQLite's INTEGER) and its errors.

use std::time::Duration;

use crate::state::shared::StoreError;

/// [`crate::state::tasks::now_ms`] as SQLite's INTEGER.
pub(super) fn now_ms() -> i64 {
    i64::try_from(crate::state::tasks::now_ms()).unwrap_or(i64::MAX)
}

/// `d` from now, as SQLite's INTEGER.
pub(super) fn after_ms(d: Duration) -> i64 {
    now_ms().saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A store error from an SQLite error.
pub(super) fn err(e: impl std::fmt::Display) -> StoreError {
    StoreError::from_display(e)
}
