//! Outcomes (Part II §5.7): the closed classification of a Run or step.
//!
//! An [`Outcome`] is constructed only through [`Outcome::success`] and [`Outcome::failure`], so
//! `error` is null exactly when `ok` is true.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The closed classification of a Run or step. Constructed only through [`Outcome::success`]
/// and [`Outcome::failure`], so `error` is null exactly when `ok` is true.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Outcome {
    ok: bool,
    /// Borrowed for the common `success`, so recording a successful step allocates no status.
    status: std::borrow::Cow<'static, str>,
    error: Option<String>,
}

impl Outcome {
    /// `{ok: true, status: "success", error: null}`.
    pub fn success() -> Self {
        Outcome { ok: true, status: std::borrow::Cow::Borrowed("success"), error: None }
    }
    /// A failure with a status from the closed set and a non-null message.
    pub fn failure(status: &str, error: impl Into<String>) -> Self {
        let mut error = error.into();
        if error.is_empty() {
            error = status.to_owned();
        }
        Outcome { ok: false, status: status.to_owned().into(), error: Some(error) }
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
