//! What can go wrong between a Host and a server, routed as Part III §7.1 says: a request
//! error (`isError: true`) is [`HostError::Request`] with a closed [`ErrorKind`]; a carrier
//! error (a JSON-RPC error response) is [`HostError::Carrier`]; the transport's own trouble,
//! timeouts, oversized and malformed answers have their own variants. Invalid programs and
//! failed Runs are never errors: they are values (see [`Verdict`](super::Verdict) and
//! [`Ran`](super::Ran)).

use std::time::Duration;

use serde_json::Value;

use crate::model::errors::ErrorKind;

/// A request error the server answered (`isError: true`, Part III §7.2).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestFailure {
    /// The closed kind; a kind this Host does not know reads as [`ErrorKind::Internal`]
    /// (Part III §10.2 item 7).
    pub kind: ErrorKind,
    /// The kind as the server wrote it (differs from `kind` only for an unknown kind).
    pub wire_kind: String,
    /// Server-authored prose: show it, never branch on it.
    pub message: String,
    /// The `catalog_version` sibling, where the operation mandates one.
    pub catalog_version: Option<String>,
}

impl RequestFailure {
    /// Reads a request error's `structuredContent`; `None` when it has no `error` object.
    ///
    /// ```
    /// use pilotage_runtime::host::RequestFailure;
    /// use pilotage_runtime::model::errors::ErrorKind;
    /// let failure = RequestFailure::read(&serde_json::json!({"error": {"kind": "new_kind", "message": "m"}}));
    /// assert_eq!(failure.unwrap().kind, ErrorKind::Internal);
    /// ```
    pub fn read(structured: &Value) -> Option<RequestFailure> {
        let error = structured.get("error")?.as_object()?;
        let wire_kind = error.get("kind").and_then(Value::as_str).unwrap_or("").to_owned();
        let kind =
            ErrorKind::ALL.into_iter().find(|k| k.as_str() == wire_kind).unwrap_or(ErrorKind::Internal);
        let message = error.get("message").and_then(Value::as_str).unwrap_or("").to_owned();
        let catalog_version = structured.get("catalog_version").and_then(Value::as_str).map(str::to_owned);
        Some(RequestFailure { kind, wire_kind, message, catalog_version })
    }
}

/// Why a Host request did not produce a Pilotage value.
#[derive(Debug, PartialEq)]
#[non_exhaustive]
pub enum HostError {
    /// The server answered a request error (Part III §7.2).
    Request(RequestFailure),
    /// The server answered a JSON-RPC error (a carrier protocol error, Part III §7.1).
    Carrier {
        /// The JSON-RPC error code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// The connection failed: spawning, I/O, HTTP, a closed peer.
    Transport(String),
    /// The server did not answer within the limit.
    Timeout {
        /// What was waited for.
        what: String,
        /// The limit.
        after: Duration,
    },
    /// An answer exceeded a [`HostLimits`](super::HostLimits) bound.
    TooLarge {
        /// What was too large.
        what: String,
        /// The bound, in bytes (or items for tool lists).
        limit: usize,
    },
    /// An answer that is not what the binding defines (no `structuredContent`, a shape that
    /// does not read as the operation's response).
    Malformed {
        /// The tool or method.
        what: String,
        /// What was wrong.
        reason: String,
    },
    /// The server is not a usable Pilotage server: no manifest, or one that breaks the
    /// manifest's schema or its consistency rules (Part II §4.3).
    Manifest(String),
    /// The manifest names no such Language.
    UnknownLanguage(String),
    /// The Language does not declare what the request needs (e.g. `execute`), or its tools do
    /// not carry the declarations a request is built from (Part III §4.4, §5).
    Unsupported(String),
    /// The call would break a loop duty of Part II §7 (executing while an error-severity
    /// diagnostic stands, an idempotency key reused for another runnable, ...): nothing was
    /// sent.
    Loop(String),
    /// The gate held an execute request with exact arguments
    /// ([`Host::call_tool`](super::Host::call_tool)) and the approver did not grant it: the
    /// server saw no request. (Through the loop, a denial is a value,
    /// [`Execution::Denied`](super::Execution::Denied).)
    Denied(Box<super::Denial>),
}

impl HostError {
    /// The request error's closed kind, when this is one.
    pub fn request_kind(&self) -> Option<ErrorKind> {
        match self {
            HostError::Request(failure) => Some(failure.kind),
            _ => None,
        }
    }
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostError::Request(r) => write!(f, "request error {}: {}", r.kind.as_str(), r.message),
            HostError::Carrier { code, message } => write!(f, "carrier error {code}: {message}"),
            HostError::Transport(reason) => write!(f, "transport: {reason}"),
            HostError::Timeout { what, after } => write!(f, "{what}: no answer within {after:?}"),
            HostError::TooLarge { what, limit } => write!(f, "{what}: larger than the limit {limit}"),
            HostError::Malformed { what, reason } => write!(f, "{what}: malformed answer: {reason}"),
            HostError::Manifest(reason) => write!(f, "manifest: {reason}"),
            HostError::UnknownLanguage(name) => write!(f, "the manifest names no Language {name}"),
            HostError::Unsupported(reason) => write!(f, "unsupported: {reason}"),
            HostError::Loop(reason) => write!(f, "refused by the loop's rules: {reason}"),
            HostError::Denied(denial) => write!(f, "held by the risk gate: {}", denial.reason),
        }
    }
}

impl std::error::Error for HostError {}
