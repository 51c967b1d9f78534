//! Outcomes (Part II §5.7) and the execute response (Part II §6.5).
//!
//! An [`Outcome`] is constructed only through [`Outcome::success`] and [`Outcome::failure`], so
//! `error` is null exactly when `ok` is true.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::diagnostic::Diagnostic;
use super::trace::Trace;

/// The closed classification of a Run or step. Constructed only through [`Outcome::success`]
/// and [`Outcome::failure`], so `error` is null exactly when `ok` is true.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Outcome {
    ok: bool,
    status: String,
    error: Option<String>,
}

impl Outcome {
    /// `{ok: true, status: "success", error: null}`.
    pub fn success() -> Self {
        Outcome { ok: true, status: "success".into(), error: None }
    }
    /// A failure with a status from the closed set and a non-null message.
    pub fn failure(status: &str, error: impl Into<String>) -> Self {
        let mut error = error.into();
        if error.is_empty() {
            error = status.to_owned();
        }
        Outcome { ok: false, status: status.to_owned(), error: Some(error) }
    }
    /// Whether the Run completed successfully.
    pub fn ok(&self) -> bool {
        self.ok
    }
    /// The status.
    pub fn status(&self) -> &str {
        &self.status
    }
    /// The failure summary (`None` exactly when ok).
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }
}

/// The execute response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecuteResponse {
    /// Always present, refused Runs included.
    pub run_id: String,
    /// The outcome.
    pub outcome: Outcome,
    /// Engine-defined result, only when ok.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "super::trace::present")]
    pub output: Option<Value>,
    /// The refusal's diagnostics (status `validation_error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<Diagnostic>>,
    /// The inline trace of a started Run at effective level summary or full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
}
