//! Reading diagnostics in tests: where each points, in one string.

use crate::model::diagnostic::{Diagnostic, Locator};

/// Where `diagnostic` points: its JSON Pointer, or `line:column-line:column` for a text range.
pub fn locator(diagnostic: &Diagnostic) -> String {
    match &diagnostic.path {
        Locator::Pointer(pointer) => pointer.clone(),
        Locator::Range(r) => format!("{}:{}-{}:{}", r.start.line, r.start.column, r.end.line, r.end.column),
    }
}

/// `(code, locator)` of every diagnostic, in order.
///
/// ```
/// use pilotage_runtime::model::diagnostic::{Diagnostic, Severity, TextRange};
/// use pilotage_runtime::testkit::{findings, has};
/// let found = [
///     Diagnostic::new(Severity::Error, "unknown_op", "/op", "no such op"),
///     Diagnostic::new(Severity::Error, "syntax_error", TextRange::new(1, 1, 1, 6), "bad"),
/// ];
/// assert_eq!(findings(&found), [("unknown_op".into(), "/op".into()), ("syntax_error".into(), "1:1-1:6".into())]);
/// assert!(has(&found, "syntax_error", "1:1-1:6"));
/// assert!(!has(&found, "unknown_op", ""));
/// ```
pub fn findings(diagnostics: &[Diagnostic]) -> Vec<(String, String)> {
    diagnostics.iter().map(|d| (d.code.clone(), locator(d))).collect()
}

/// Whether a diagnostic with `code` points at `at` (as [`locator`] writes it).
pub fn has(diagnostics: &[Diagnostic], code: &str, at: &str) -> bool {
    diagnostics.iter().any(|d| d.code == code && locator(d) == at)
}
