//! What the runtime keeps between requests: sessions (each with its own engines, its
//! `"session"`-retention runs, promotions and catalog histories), run stores (memory and the
//! durable SQLite store), idempotency claims and promoted programs.

pub mod catalog_history;
pub(crate) mod idempotency;
pub mod promotions;
pub mod runs;
pub(crate) mod session;
pub mod sqlite;

pub use self::runs::{MemoryRunStore, RunRecord, RunStore};
pub use self::sqlite::SqliteRunStore;

use std::sync::Arc;

/// The deployment-wide stores every session shares: the durable run store (ISO 8601 duration
/// retention, with its idempotency records) and the in-process idempotency key table.
#[derive(Default)]
pub(crate) struct Stores {
    pub durable: Option<Arc<dyn RunStore>>,
    pub idempotency: idempotency::Idempotency,
}
