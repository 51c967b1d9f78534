//! Diagnostics, plans and the `validate` operation (Part II §5.5, §5.6, §6.4).
//!
//! The engine reports facts (findings, plan steps, references) through a typed
//! [`Validation`]; the runtime derives the verdicts: `valid` from the severities,
//! `max_risk` and `max_risk_hints` from the steps, `catalog_version` from the snapshot. Codes
//! outside the Language's closed set become `constraint`; step ids with `#` or `/` are
//! reported; context is checked against `context_schema` before the engine runs.

use std::collections::BTreeSet;
use std::marker::PhantomData;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::CatalogSnapshot;
use crate::closed_sets::{DiagnosticCode, RiskLevel, RiskMember};
use crate::language::Caller;
use crate::risk::RiskHints;

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

/// The `{branch, label}` of a step inside a branch arm.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Arm {
    /// The branch step id.
    pub branch: String,
    /// The arm label (equal to the trace decision's `took`).
    pub label: String,
}

/// One plan step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanStep {
    /// Program step identifier.
    pub id: String,
    /// The invoked entry; absent for control flow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<String>,
    /// The enclosing arm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arm: Option<Arm>,
    /// The innermost enclosing loop.
    #[serde(rename = "loop", skip_serializing_if = "Option::is_none")]
    pub in_loop: Option<String>,
    /// Engine-defined risk of this use.
    pub risk: String,
    /// Its hints.
    pub risk_hints: RiskHints,
    #[serde(skip)]
    #[schemars(skip)]
    rank: usize,
}

impl PlanStep {
    /// A plan step with risk level `risk`.
    pub fn new<R: RiskLevel>(id: impl Into<String>, risk: R) -> Self {
        PlanStep {
            id: id.into(),
            calls: None,
            arm: None,
            in_loop: None,
            risk: risk.wire().to_owned(),
            risk_hints: risk.hints(),
            rank: risk.rank(),
        }
    }
    /// The entry this step invokes.
    pub fn calls(&mut self, entry: impl Into<String>) -> &mut Self {
        self.calls = Some(entry.into());
        self
    }
    /// The arm that contains this step.
    pub fn arm(&mut self, branch: impl Into<String>, label: impl Into<String>) -> &mut Self {
        self.arm = Some(Arm { branch: branch.into(), label: label.into() });
        self
    }
    /// The innermost loop that contains this step.
    pub fn in_loop(&mut self, loop_id: impl Into<String>) -> &mut Self {
        self.in_loop = Some(loop_id.into());
        self
    }
}

/// The plan of a valid program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// Steps in expected execution order.
    pub steps: Vec<PlanStep>,
    /// The highest engine-defined risk among the steps.
    pub max_risk: String,
    /// AND/OR aggregate of the steps' hints.
    pub max_risk_hints: RiskHints,
}

/// The `validate` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ValidateResponse {
    /// No error-severity diagnostic.
    pub valid: bool,
    /// Every finding (always present).
    pub diagnostics: Vec<Diagnostic>,
    /// The snapshot validated against, for catalog-bearing Languages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog_version: Option<String>,
    /// The plan, when `plan` is declared and the program is valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// Referenced entries, when `catalog` is declared without `plan`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub references: Option<Vec<String>>,
}

/// What an engine's validate method receives (cheap to clone).
#[derive(Clone, Debug)]
pub struct ValidateRequest {
    /// The program.
    pub program: Arc<Value>,
    /// Context that passed the context checks (`None` otherwise).
    pub context: Option<Arc<Value>>,
    /// The caller's snapshot, for catalog-bearing Languages.
    pub catalog: Option<Arc<CatalogSnapshot>>,
    /// Who is asking.
    pub caller: Caller,
}

/// Untyped engine findings, produced by [`Validation::finish`].
#[derive(Clone, Debug, Default)]
pub struct ValidationCore {
    /// Findings.
    pub diagnostics: Vec<Diagnostic>,
    /// Plan steps.
    pub steps: Vec<PlanStep>,
    /// Referenced catalog entries.
    pub references: Vec<String>,
    /// The risk-level set (to name `max_risk`).
    pub risks: &'static [RiskMember],
    /// Step ids already reported for reserved characters.
    pub reported_ids: BTreeSet<String>,
    /// Set when the validator hit one of its own resource bounds.
    pub bound_exceeded: Option<String>,
}

/// The typed validation sink an engine's validate method writes to.
///
/// Codes are `C` and risk levels `R`, so a value outside the Language's closed sets cannot be
/// written. The engine states facts; the runtime derives `valid`, `max_risk_hints` and the rest.
pub struct Validation<C: DiagnosticCode, R: RiskLevel> {
    request: ValidateRequest,
    core: ValidationCore,
    _sets: PhantomData<(C, R)>,
}

impl<C: DiagnosticCode, R: RiskLevel> Validation<C, R> {
    /// A sink for `request`.
    pub fn new(request: &ValidateRequest) -> Self {
        Validation {
            request: request.clone(),
            core: ValidationCore { risks: R::MEMBERS, ..ValidationCore::default() },
            _sets: PhantomData,
        }
    }
    /// The caller's catalog snapshot (catalog-bearing Languages).
    pub fn catalog(&self) -> Option<&CatalogSnapshot> {
        self.request.catalog.as_deref()
    }
    /// The caller's catalog snapshot as a shared handle, to read while reporting.
    pub fn snapshot(&self) -> Option<Arc<CatalogSnapshot>> {
        self.request.catalog.clone()
    }
    /// The validated context, when supplied and well-formed.
    pub fn context(&self) -> Option<&Value> {
        self.request.context.as_deref()
    }
    /// Who is asking.
    pub fn caller(&self) -> &Caller {
        &self.request.caller
    }
    /// Report an error.
    pub fn error(
        &mut self,
        code: C,
        path: impl Into<Locator>,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        self.push(Severity::Error, code.wire(), path, message)
    }
    /// Report a warning.
    pub fn warning(
        &mut self,
        code: C,
        path: impl Into<Locator>,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        self.push(Severity::Warning, code.wire(), path, message)
    }
    /// Report an error with the reserved catch-all code `constraint`.
    pub fn constraint(&mut self, path: impl Into<Locator>, message: impl Into<String>) -> &mut Diagnostic {
        self.push(Severity::Error, "constraint", path, message)
    }
    fn push(
        &mut self,
        severity: Severity,
        code: &str,
        path: impl Into<Locator>,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        self.core.diagnostics.push(Diagnostic::new(severity, code, path, message));
        let last = self.core.diagnostics.len() - 1;
        &mut self.core.diagnostics[last]
    }
    /// Check a program step identifier for the reserved `#` and `/` (Part II §3.4), reporting a
    /// `constraint` error at `path` when present. Returns whether the id is usable.
    pub fn step_id(&mut self, id: &str, path: impl Into<Locator>) -> bool {
        match reserved_char(id) {
            None => true,
            Some(c) => {
                self.core.reported_ids.insert(id.to_owned());
                self.constraint(
                    path,
                    format!("step identifier '{id}' contains the reserved character '{c}'"),
                )
                .hint("step identifiers may not contain '#' or '/': rename the step");
                false
            }
        }
    }
    /// Add a plan step.
    pub fn step(&mut self, id: impl Into<String>, risk: R) -> &mut PlanStep {
        self.core.steps.push(PlanStep::new(id, risk));
        let last = self.core.steps.len() - 1;
        &mut self.core.steps[last]
    }
    /// Record a referenced catalog entry (used for `references` when `plan` is undeclared).
    pub fn reference(&mut self, entry: impl Into<String>) {
        self.core.references.push(entry.into());
    }
    /// Stop: validating this program would exceed one of the validator's own resource bounds
    /// (nesting its parser cannot take, expansion past a limit). The request then ends with the
    /// `bounds_exceeded` request error (Part II §10.1), not with diagnostics.
    pub fn bound_exceeded(&mut self, message: impl Into<String>) {
        self.core.bound_exceeded = Some(message.into());
    }
    /// Whether an error has been reported so far.
    pub fn has_errors(&self) -> bool {
        self.core.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }
    /// Hand the findings to the runtime.
    pub fn finish(self) -> ValidationCore {
        self.core
    }
}

/// The reserved character in `id`, if any.
pub fn reserved_char(id: &str) -> Option<char> {
    id.chars().find(|c| *c == '#' || *c == '/')
}

/// What the runtime needs to know to turn findings into a response.
pub struct Derivation<'a> {
    /// The closed code set.
    pub codes: &'a [&'static str],
    /// `plan` declared.
    pub plan: bool,
    /// The snapshot token, for catalog-bearing Languages.
    pub catalog_version: Option<String>,
}

/// Derive the response: reserved-character and closed-set normalisation, `valid`, the plan
/// with its maxima, `references`.
pub fn derive(mut core: ValidationCore, extra: Vec<Diagnostic>, how: &Derivation<'_>) -> ValidateResponse {
    let mut diagnostics = extra;
    for mut d in core.diagnostics.drain(..) {
        if !how.codes.contains(&d.code.as_str()) {
            d.message = format!("{} (unclassified code '{}')", d.message, d.code);
            d.code = "constraint".to_owned();
        }
        diagnostics.push(d);
    }
    for step in &core.steps {
        if let Some(c) = reserved_char(&step.id) {
            if core.reported_ids.insert(step.id.clone()) {
                diagnostics.push(Diagnostic::new(
                    Severity::Error,
                    "constraint",
                    "",
                    format!("step identifier '{}' contains the reserved character '{c}'", step.id),
                ));
            }
        }
    }
    let valid = !diagnostics.iter().any(|d| d.severity == Severity::Error);
    let plan = (how.plan && valid).then(|| {
        let max_risk_hints = RiskHints::aggregate(core.steps.iter().map(|s| s.risk_hints));
        let max_rank = core.steps.iter().map(|s| s.rank).max().unwrap_or(0);
        let max_risk = core.risks.get(max_rank).map(|m| m.name.to_owned()).unwrap_or_default();
        Plan { steps: core.steps, max_risk, max_risk_hints }
    });
    let references = (how.catalog_version.is_some() && !how.plan && valid).then(|| {
        let mut seen = BTreeSet::new();
        core.references.retain(|r| seen.insert(r.clone()));
        core.references
    });
    ValidateResponse { valid, diagnostics, catalog_version: how.catalog_version.clone(), plan, references }
}

/// Context findings (Part II §6.4): with a schema, missing or non-conforming context is a
/// `context_binding` error; without one, any supplied context is.
pub fn check_context(schema: Option<&jsonschema::Validator>, context: Option<&Value>) -> Vec<Diagnostic> {
    let error =
        |path: String, message: String| Diagnostic::new(Severity::Error, "context_binding", path, message);
    match (schema, context) {
        (None, None) => vec![],
        (None, Some(_)) => {
            vec![error(String::new(), "this Language takes no context: omit `context`".into())]
        }
        (Some(_), None) => vec![error(
            String::new(),
            "this Language requires `context` (see context_schema in the manifest)".into(),
        )],
        (Some(v), Some(ctx)) => {
            v.iter_errors(ctx).map(|e| error(e.instance_path().to_string(), e.to_string())).collect()
        }
    }
}

/// Nesting depth of a JSON value (scalars 0).
pub fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}
