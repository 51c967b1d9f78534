//! What the PostgreSQL store's statements share: its errors, durations as milliseconds and the
//! expression of a time from now.

use std::time::Duration;

use crate::state::shared::StoreError;

/// A store error from a PostgreSQL or pool error, with its cause.
pub(super) fn err(e: impl std::error::Error) -> StoreError {
    // tokio-postgres says only "db error" in its Display; the cause carries the message.
    match e.source() {
        Some(cause) => StoreError(format!("{e}: {cause}")),
        None => StoreError::from_display(e),
    }
}

/// A duration as whole milliseconds, at most a century (what an `interval` comfortably holds).
pub(super) fn ms(d: Duration) -> i64 {
    const CENTURY_MS: i64 = 100 * 365 * 86_400_000;
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX).min(CENTURY_MS)
}

/// `clock_timestamp()` plus the milliseconds of parameter `$1`: the database's clock, so
/// replicas need no clock agreement.
pub(super) const LATER: &str = "clock_timestamp() + $1::BIGINT * INTERVAL '1 millisecond'";
