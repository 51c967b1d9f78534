//! The findings a JSON program engine (`workflow/v1`, `automation/v1`) collects while it parses
//! and checks a program, before they are handed to the runtime's [`Validation`].
//!
//! Each engine's `program.rs` includes it with
//! `#[path = "../../common/findings.rs"] mod findings;`.

// A server or test that hosts several engines includes this file once per engine.
#![allow(clippy::duplicate_mod)]

use pilotage::engine::Validation;
use pilotage::model::closed_sets::{DiagnosticCode, RiskLevel};
use serde_json::Value as Json;

/// One finding with its code from the closed set `C`.
#[derive(Clone, Debug)]
pub struct Finding<C> {
    pub warning: bool,
    pub code: C,
    pub path: String,
    pub message: String,
    pub hint: Option<String>,
}

impl<C> Finding<C> {
    pub fn error(code: C, path: impl Into<String>, message: impl Into<String>) -> Self {
        Finding { warning: false, code, path: path.into(), message: message.into(), hint: None }
    }
    pub fn warning(code: C, path: impl Into<String>, message: impl Into<String>) -> Self {
        Finding { warning: true, ..Finding::error(code, path, message) }
    }
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    /// Add a hint when there is one.
    pub fn maybe_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }
}

impl<C: DiagnosticCode> Finding<C> {
    /// Hand the finding to the runtime.
    pub fn report<R: RiskLevel>(self, v: &mut Validation<C, R>) {
        let d = if self.warning {
            v.warning(self.code, self.path, self.message)
        } else {
            v.error(self.code, self.path, self.message)
        };
        if let Some(h) = self.hint {
            d.hint(h);
        }
    }
}

/// Whether any of `findings` is an error.
pub fn has_errors<C>(findings: &[Finding<C>]) -> bool {
    findings.iter().any(|f| !f.warning)
}

/// The JSON type name of a value (`integer` for integral numbers).
pub fn type_name(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}
