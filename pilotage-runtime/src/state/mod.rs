//! What the runtime keeps between requests: sessions (each with its own engines and its
//! `"session"`-retention runs) and the [`SharedState`] behind everything that outlives a
//! request: duration-retention run records, idempotency claims, promoted programs and the
//! catalogs served to each caller. Backends: [`MemoryState`] (one process), [`SqliteState`]
//! (one process, durable; the default store of the examples) and `PostgresState` (several
//! replicas; cargo feature `postgres`).

pub mod catalog_history;
pub(crate) mod idempotency;
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod promotions;
pub mod runs;
pub(crate) mod session;
pub mod shared;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[doc(hidden)]
pub mod suite;
pub mod tasks;
pub(crate) mod verdicts;
mod weighed;

pub use self::memory::MemoryState;
#[cfg(feature = "postgres")]
pub use self::postgres::PostgresState;
pub use self::runs::{MemoryRunStore, RunRecord};
pub use self::shared::{
    Claimed, KeptRun, KeyRef, SharedState, StoreError, StoreResult, Stored, Tenure, HISTORY_DEPTH,
};
#[cfg(feature = "sqlite")]
pub use self::sqlite::SqliteState;
pub use self::tasks::{TaskRecord, TaskState};

use std::sync::Arc;

/// The deployment-wide store every session shares.
pub(crate) struct Stores {
    /// Duration-retention runs, and the scope of every caller whose identity outlives a session.
    pub state: Arc<dyn SharedState>,
    /// The tasks running in this process.
    pub live: tasks::LiveTasks,
}

impl Default for Stores {
    fn default() -> Self {
        Stores { state: Arc::new(MemoryState::default()), live: tasks::LiveTasks::default() }
    }
}
