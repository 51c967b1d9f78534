//! Diagnostics (Part II §5.5): severity, closed code, locator (a JSON Pointer or a text range),
//! message and hint.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A 1-based position in a text program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TextPosition {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

/// A 1-based range in a text program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TextRange {
    /// First character.
    pub start: TextPosition,
    /// End (as the Language documents it).
    pub end: TextPosition,
}

impl TextRange {
    /// The range from `(l1, c1)` to `(l2, c2)`.
    pub fn new(l1: u32, c1: u32, l2: u32, c2: u32) -> Self {
        TextRange { start: TextPosition { line: l1, column: c1 }, end: TextPosition { line: l2, column: c2 } }
    }
}

/// Where a diagnostic applies: a JSON Pointer, or a text range.
///
/// `Validation::error`, `warning` and `constraint` take `impl Into<Locator>`: a pointer from
/// `&str`, `String` or `&String` (for `locator = "json-pointer"`), a range from
/// [`TextRange`] (for `locator = "text-range"`).
///
/// ```
/// use pilotage_runtime::model::diagnostic::{Locator, TextRange};
///
/// let path = format!("/steps/{}", 3);
/// assert_eq!(Locator::from(&path), Locator::Pointer("/steps/3".into()));
/// assert_eq!(Locator::from("/op"), Locator::Pointer("/op".into()));
/// assert!(matches!(Locator::from(TextRange::new(1, 1, 1, 7)), Locator::Range(_)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Locator {
    /// An RFC 6901 pointer (`""` for the whole document).
    Pointer(String),
    /// A text range.
    Range(TextRange),
}

impl From<&str> for Locator {
    fn from(p: &str) -> Self {
        Locator::Pointer(p.to_owned())
    }
}
impl From<String> for Locator {
    fn from(p: String) -> Self {
        Locator::Pointer(p)
    }
}
impl From<&String> for Locator {
    fn from(p: &String) -> Self {
        Locator::Pointer(p.clone())
    }
}
impl From<TextRange> for Locator {
    fn from(r: TextRange) -> Self {
        Locator::Range(r)
    }
}

/// `error` or `warning`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Makes the program invalid.
    Error,
    /// Does not.
    Warning,
}

/// One validation finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Diagnostic {
    /// Severity.
    pub severity: Severity,
    /// Member of the closed code set.
    pub code: String,
    /// Locator.
    pub path: Locator,
    /// Position inside a string addressed by a pointer `path`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<TextRange>,
    /// Explanation (server-authored).
    pub message: String,
    /// Suggested correction (server-authored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Diagnostic {
    /// A diagnostic with a wire code (the runtime's own reserved-code findings use this).
    pub fn new(severity: Severity, code: &str, path: impl Into<Locator>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity,
            code: code.to_owned(),
            path: path.into(),
            range: None,
            message: message.into(),
            hint: None,
        }
    }
    /// Add a hint.
    pub fn hint(&mut self, hint: impl Into<String>) -> &mut Self {
        self.hint = Some(hint.into());
        self
    }
    /// Add a range inside the string at `path`.
    pub fn range(&mut self, range: TextRange) -> &mut Self {
        self.range = Some(range);
        self
    }
}

/// The reserved character in `id`, if any.
pub fn reserved_char(id: &str) -> Option<char> {
    id.chars().find(|c| *c == '#' || *c == '/')
}
