//! Typed results from `structuredContent` only (Part III §6, §10.2 item 5), routed as Part III
//! §7.1 says: `isError: true` is a request error ([`HostError::Request`]); `valid: false` and
//! `ok: false` are values. Unknown members are ignored; unknown values read conservatively
//! (an unknown diagnostic severity as `error`, an unknown `ok: false` status as `partial`).

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::carrier::ToolAnswer;
use super::error::{HostError, RequestFailure};
use super::limits::HostLimits;
use crate::model::errors::ErrorKind;
use crate::model::execution::ExecuteResponse;
use crate::model::plan::ValidateResponse;

/// The reserved statuses of Part II §5.7, and `partial` for every `ok: false` status this Host
/// cannot place (Part II §12.2 item 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunStatus {
    /// `success`.
    Success,
    /// `validation_error`: the Run was refused; resume from authoring with its diagnostics.
    ValidationError,
    /// `catalog_drift`: recoverable by revalidating against the current snapshot.
    CatalogDrift,
    /// `promotion_drift`: terminal for the reference.
    PromotionDrift,
    /// `error`.
    Error,
    /// `partial`, and every status this Host does not know (an engine's own failure statuses
    /// included: the raw name stays in the response's outcome).
    Partial,
}

impl RunStatus {
    /// The class of an outcome `(ok, status)`.
    ///
    /// ```
    /// use pilotage_runtime::host::RunStatus;
    /// assert_eq!(RunStatus::classify(false, "exploded_somehow"), RunStatus::Partial);
    /// assert_eq!(RunStatus::classify(false, "catalog_drift"), RunStatus::CatalogDrift);
    /// ```
    pub fn classify(ok: bool, status: &str) -> RunStatus {
        match (ok, status) {
            (true, _) => RunStatus::Success,
            (false, "validation_error") => RunStatus::ValidationError,
            (false, "catalog_drift") => RunStatus::CatalogDrift,
            (false, "promotion_drift") => RunStatus::PromotionDrift,
            (false, "error") => RunStatus::Error,
            (false, _) => RunStatus::Partial,
        }
    }
}

/// A tool answer's `structuredContent`: the object of a successful result, or the request
/// error of an `isError: true` one (an error result without a readable `error` object is an
/// `internal` request error: an error is never read as a value).
pub(crate) fn structured(answer: ToolAnswer, what: &str) -> Result<Value, HostError> {
    if answer.is_error {
        let failure = answer.structured.as_ref().and_then(RequestFailure::read).unwrap_or(RequestFailure {
            kind: ErrorKind::Internal,
            wire_kind: String::new(),
            message: format!("{what} answered isError without a structured request error"),
            catalog_version: None,
        });
        return Err(HostError::Request(failure));
    }
    match answer.structured {
        Some(value) if value.is_object() => Ok(value),
        Some(_) => Err(malformed(what, "structuredContent is not an object")),
        None => Err(malformed(what, "no structuredContent")),
    }
}

/// `value` read as `T`.
pub(crate) fn typed<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, HostError> {
    serde_json::from_value(value).map_err(|e| malformed(what, &e.to_string()))
}

/// A validate answer. A diagnostic severity this Host does not know is read as `error`.
pub(crate) fn validate_response(answer: ToolAnswer, what: &str) -> Result<ValidateResponse, HostError> {
    let mut value = structured(answer, what)?;
    if let Some(diagnostics) = value.get_mut("diagnostics").and_then(Value::as_array_mut) {
        for d in diagnostics {
            if let Some(severity) = d.get_mut("severity") {
                if severity != "warning" {
                    *severity = Value::from("error");
                }
            }
        }
    }
    let response: ValidateResponse = typed(value, what)?;
    Ok(response)
}

/// An execute answer, its inline trace no larger than `limits.max_trace_bytes`.
pub(crate) fn execute_response(
    answer: ToolAnswer,
    what: &str,
    limits: &HostLimits,
) -> Result<ExecuteResponse, HostError> {
    let value = structured(answer, what)?;
    if let Some(trace) = value.get("trace") {
        if crate::model::size::json_size(trace) > limits.max_trace_bytes {
            return Err(HostError::TooLarge {
                what: format!("the trace of {what}"),
                limit: limits.max_trace_bytes,
            });
        }
    }
    typed(value, what)
}

fn malformed(what: &str, reason: &str) -> HostError {
    HostError::Malformed { what: what.to_owned(), reason: reason.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::diagnostic::Severity;

    #[test]
    fn an_unknown_severity_reads_as_error_and_unknown_members_are_ignored() {
        let structured = serde_json::json!({"valid": true, "future_member": 1, "diagnostics": [
            {"severity": "catastrophic", "code": "c", "path": "", "message": "m", "x-new": true},
            {"severity": "warning", "code": "w", "path": "", "message": "m"}
        ]});
        let answer = ToolAnswer { is_error: false, structured: Some(structured) };
        let response = validate_response(answer, "v").unwrap();
        let severities: Vec<Severity> = response.diagnostics.iter().map(|d| d.severity).collect();
        assert_eq!(severities, [Severity::Error, Severity::Warning]);
    }

    #[test]
    fn an_error_result_is_never_read_as_a_value() {
        let bare = ToolAnswer {
            is_error: true,
            structured: Some(serde_json::json!({"valid": true, "diagnostics": []})),
        };
        let Err(HostError::Request(failure)) = validate_response(bare, "v") else {
            panic!("an error read as a value")
        };
        assert_eq!(failure.kind, ErrorKind::Internal);
    }
}
