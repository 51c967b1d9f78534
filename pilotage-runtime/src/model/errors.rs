//! The request-error channel (Part III §7.2): a well-formed request that cannot be served.
//!
//! Invalid programs and failed runs are *values* (diagnostics, outcomes), never request errors;
//! the types in [`crate::model::diagnostic`], [`crate::model::plan`] and [`crate::model::outcome`] carry those.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The closed set of request-error kinds (Part III §7.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Unknown guide, topic, entry, Language, promoted reference or Run (also unauthorized ones).
    NotFound,
    /// Invalid runnable selection, unsupported `test_run`/`mode`, unknown `trace_level`, or a
    /// member inapplicable to the verb or the declared capabilities.
    InvalidRequest,
    /// `changed_since` cannot be computed from the supplied token.
    UnknownBaseline,
    /// An idempotency key reused with a different runnable or input.
    IdempotencyConflict,
    /// A validation resource bound was exceeded.
    BoundsExceeded,
    /// `store: true` on a Language whose retention is `"none"`.
    Unsupported,
    /// Validator, engine or server malfunction.
    Internal,
}

impl ErrorKind {
    /// Every kind, in the order of the specification's table.
    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::NotFound,
        ErrorKind::InvalidRequest,
        ErrorKind::UnknownBaseline,
        ErrorKind::IdempotencyConflict,
        ErrorKind::BoundsExceeded,
        ErrorKind::Unsupported,
        ErrorKind::Internal,
    ];

    /// The wire name, e.g. `"not_found"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::UnknownBaseline => "unknown_baseline",
            ErrorKind::IdempotencyConflict => "idempotency_conflict",
            ErrorKind::BoundsExceeded => "bounds_exceeded",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Internal => "internal",
        }
    }
}

/// The `error` member of a request error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// The closed kind a client branches on.
    pub kind: ErrorKind,
    /// Server-authored prose; clients must not branch on it.
    pub message: String,
}

/// A request error: `isError: true` with `{"error": {kind, message}}` and any sibling fields
/// Part II mandates (today: `catalog_version` on catalog errors).
///
/// ```
/// use pilotage_runtime::model::errors::{RequestError, ErrorKind};
/// let e = RequestError::not_found("unknown guide 'intro'");
/// assert_eq!(e.error.kind, ErrorKind::NotFound);
/// assert_eq!(serde_json::to_value(&e).unwrap()["error"]["kind"], "not_found");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequestError {
    /// Kind and message.
    pub error: ErrorBody,
    /// The current catalog token, present on catalog request errors (Part II §6.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog_version: Option<String>,
}

impl RequestError {
    /// A request error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        RequestError { error: ErrorBody { kind, message: message.into() }, catalog_version: None }
    }
    /// `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }
    /// `invalid_request`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidRequest, message)
    }
    /// `internal`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
    /// Attach the `catalog_version` sibling.
    pub fn with_catalog_version(mut self, version: impl Into<String>) -> Self {
        self.catalog_version = Some(version.into());
        self
    }
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.error.kind.as_str(), self.error.message)
    }
}

impl std::error::Error for RequestError {}
