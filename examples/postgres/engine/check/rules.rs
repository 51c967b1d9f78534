//! What is outside the Language before any parse: leading words of statements and functions
//! on the deny-list; and what each access to a relation risks and needs.

use super::super::PgRisk;

/// What a statement does to a relation, least risky first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    Read,
    Call,
    /// Read and locked (`SELECT ... FOR UPDATE`, `FOR SHARE`, ...).
    Lock,
    Insert,
    Update,
    /// `UPDATE` without `WHERE`.
    UpdateAll,
    Create,
    Delete,
    Truncate,
    Alter,
    Drop,
}

impl Access {
    /// The word the trace and messages use.
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Call => "call",
            Access::Lock => "lock",
            Access::Insert => "insert",
            Access::Update | Access::UpdateAll => "update",
            Access::Create => "create",
            Access::Delete => "delete",
            Access::Truncate => "truncate",
            Access::Alter => "alter",
            Access::Drop => "drop",
        }
    }

    /// What the access risks.
    pub fn risk(self) -> PgRisk {
        match self {
            Access::Read | Access::Call => PgRisk::Safe,
            Access::Lock | Access::Insert | Access::Update | Access::Create => PgRisk::Write,
            Access::UpdateAll | Access::Delete | Access::Truncate | Access::Alter | Access::Drop => {
                PgRisk::Destructive
            }
        }
    }

    /// The privilege tag the caller's catalog entry must carry (locking rows takes UPDATE,
    /// as PostgreSQL asks).
    pub fn privilege(self) -> Option<&'static str> {
        match self {
            Access::Read => Some("select"),
            Access::Insert => Some("insert"),
            Access::Lock | Access::Update | Access::UpdateAll => Some("update"),
            Access::Delete => Some("delete"),
            _ => None,
        }
    }
}

/// Leading words of statements outside the Language, with the reason and a hint.
pub(super) fn forbidden_word(word: &str, next: &str) -> Option<(&'static str, &'static str)> {
    let tx = ("every run already is one transaction", "remove the transaction statement");
    let session = (
        "programs do not change the session or its settings",
        "the server sets the role, search_path and timeouts of every run",
    );
    Some(match (word, next) {
        ("BEGIN" | "START" | "COMMIT" | "END" | "ROLLBACK" | "ABORT" | "SAVEPOINT" | "RELEASE", _) => tx,
        ("PREPARE" | "EXECUTE" | "DEALLOCATE", _) => tx,
        ("SET" | "RESET" | "DISCARD" | "LISTEN" | "UNLISTEN" | "NOTIFY" | "LOAD" | "SHOW", _) => session,
        ("COPY" | "IMPORT", _) => (
            "COPY reads and writes files and programs of the server",
            "read rows with SELECT and add them with INSERT",
        ),
        ("DO" | "CALL", _) => ("procedural code is outside the Language", "write the statements themselves"),
        ("GRANT" | "REVOKE" | "SECURITY" | "REASSIGN", _) => {
            ("privileges are the database administrator's", "ask an administrator for the grant")
        }
        ("VACUUM" | "ANALYZE" | "CLUSTER" | "REINDEX" | "CHECKPOINT" | "REFRESH" | "LOCK" | "COMMENT", _) => {
            ("database maintenance is outside the Language", "remove the statement")
        }
        ("EXPLAIN", _) => ("EXPLAIN is not part of the Language", "validate_sql returns the plan of a program"),
        ("CREATE", "TABLE" | "VIEW" | "INDEX" | "UNIQUE" | "OR") => return None,
        ("ALTER", "TABLE") => return None,
        ("DROP", "TABLE" | "VIEW" | "INDEX") => return None,
        ("CREATE" | "ALTER" | "DROP", _) => (
            "only tables, views and indexes may be created, altered or dropped: roles, extensions, functions, schemas and the system are the administrator's",
            "see the allow-list in the sql-pg-core guide",
        ),
        _ => return None,
    })
}

/// Functions a program may not call: files, large objects, other servers, other sessions,
/// settings, locks, and SQL hidden in strings (which would escape validation).
pub(super) const DENIED_FUNCTIONS: &[&str] = &[
    "pg_read_",
    "pg_ls_",
    "pg_stat_file",
    "pg_file_",
    "lo_",
    "dblink",
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_signal_backend",
    "pg_reload_conf",
    "pg_rotate_logfile",
    "pg_promote",
    "pg_switch_wal",
    "pg_backup_",
    "pg_start_backup",
    "pg_stop_backup",
    "pg_create_",
    "pg_drop_",
    "pg_replication_",
    "pg_logical_",
    "pg_advisory",
    "pg_try_advisory",
    "pg_notify",
    "pg_import_system_collations",
    "pg_stat_reset",
    "pg_log_",
    "set_config",
    "query_to_",
    "table_to_",
    "cursor_to_",
    "schema_to_",
    "database_to_",
];

/// Built-in functions that change data (sequences): calls to them plan as `write`.
const WRITING_FUNCTIONS: &[&str] = &["nextval", "setval"];

/// Whether `name` (unqualified) is a built-in function that changes data.
pub fn writing_function(name: &str) -> bool {
    WRITING_FUNCTIONS.contains(&name)
}

/// Whether `name` (lower case, unqualified) is on the deny-list.
pub fn denied_function(name: &str) -> bool {
    DENIED_FUNCTIONS.iter().any(|d| {
        if d.ends_with('_') {
            name.starts_with(d)
        } else {
            name == *d || name.starts_with(&format!("{d}_"))
        }
    })
}
