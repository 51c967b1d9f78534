//! [`TempStore`]: a durable run store in a temporary file, for tests of Languages whose
//! retention is an ISO 8601 duration (and of restarts: open the same file twice).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::state::SqliteState;

/// A SQLite store file in the temporary directory, unique per process and call, deleted (with
/// its WAL files) when dropped.
#[derive(Debug)]
pub struct TempStore(PathBuf);

impl TempStore {
    /// A fresh file name; `tag` makes it recognisable.
    pub fn new(tag: &str) -> TempStore {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let name = format!("pilotage-{tag}-{}-{n}-{nanos}.sqlite", std::process::id());
        TempStore(std::env::temp_dir().join(name))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Open (or create) the durable store in the file.
    ///
    /// # Panics
    /// When SQLite cannot open it.
    pub fn open(&self) -> SqliteState {
        SqliteState::open(&self.0)
            .unwrap_or_else(|e| panic!("cannot open the store {}: {e}", self.0.display()))
    }
}

impl Drop for TempStore {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}
