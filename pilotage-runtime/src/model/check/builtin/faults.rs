//! What a check says: the faults of an instance, or why a schema was refused.

use std::fmt;

/// One way an instance fails: where (a JSON Pointer into the instance, "" for the root) and why
/// (a sentence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The instance location, a JSON Pointer (`/a/0/b`, with `~0` and `~1` escapes).
    pub path: String,
    /// What is wrong there, in the words `jsonschema` uses.
    pub message: String,
}

/// Why a schema was not compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The schema is malformed.
    Invalid(String),
    /// The schema is well formed but uses keywords this check does not evaluate (their names),
    /// e.g. `pattern`.
    Unsupported(Vec<String>),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Invalid(reason) => write!(f, "not a valid JSON Schema: {reason}"),
            Refusal::Unsupported(keywords) => {
                write!(f, "uses keywords this check does not evaluate: {}", keywords.join(", "))
            }
        }
    }
}

impl std::error::Error for Refusal {}
