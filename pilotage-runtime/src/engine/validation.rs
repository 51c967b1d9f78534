//! The validate side an engine writes to (Part II §6.4): the typed [`Validation`] sink.
//!
//! The engine reports facts (findings, plan steps, references); the runtime derives the
//! verdicts: `valid` from the severities, `max_risk` and `max_risk_hints` from the steps,
//! `catalog_version` from the snapshot.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::marker::PhantomData;
use std::sync::Arc;

use serde_json::Value;

use super::call::Bounds;
use super::caller::Caller;
use super::catalog::CatalogSnapshot;
use crate::model::closed_sets::{DiagnosticCode, RiskLevel, RiskMember};
use crate::model::diagnostic::{reserved_char, Diagnostic, Locator, Severity};
use crate::model::plan::PlanStep;

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

#[doc(hidden)] // the runtime's, not an engine author's
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
    /// Diagnostics reported past the per-response cap: counted, not kept.
    pub left_out: usize,
    /// Whether an error was among the diagnostics left out.
    pub left_out_error: bool,
    /// Plan steps judged but not kept: execute's re-validation needs only their number.
    pub(crate) unkept_steps: usize,
    /// Time the validator reported waiting for a shared resource (see [`Validation::waited`]).
    pub waited: std::time::Duration,
}

thread_local! {
    /// Whether the validations started on this thread keep their plan steps.
    static KEEP_PLAN: Cell<bool> = const { Cell::new(true) };
}

/// Runs `f` with the validations it starts on this thread counting their plan steps instead of
/// keeping them (execute's re-validation: the verdict and the number of steps are all it uses).
/// A step whose id has a reserved character is still kept, so the verdict is the same.
pub(crate) fn counting_steps<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            KEEP_PLAN.with(|k| k.set(self.0));
        }
    }
    let _restore = Restore(KEEP_PLAN.with(|k| k.replace(false)));
    f()
}

/// The typed validation sink an engine's validate method writes to.
///
/// Codes are `C` and risk levels `R`, so a value outside the Language's closed sets cannot be
/// written. The engine states facts; the runtime derives `valid`, `max_risk_hints` and the rest.
///
/// A validate method reports each finding at a locator (a JSON Pointer from `&str`, `String` or
/// `&String`, or a [`TextRange`](crate::model::diagnostic::TextRange)) and plans one step per
/// unit of work with its risk level:
///
/// ```
/// # use pilotage::prelude::*;
/// # #[derive(Clone, Copy, pilotage::Codes)]
/// # enum CalcCode { UnknownOp }
/// # #[derive(Clone, Copy, pilotage::RiskLevels)]
/// # enum CalcRisk { #[risk(read_only)] Safe }
/// # struct Calc;
/// # #[pilotage::language(
/// #     name = "calc/v1", title = "Arithmetic programs", program = "calc", locator = "json-pointer",
/// #     capabilities(guides, validate, plan, execute), execution = "immediate", trace = "full",
/// #     retention = "none", guides = "../examples/calc/guides", codes = CalcCode, risk = CalcRisk,
/// # )]
/// # impl Calc {
/// #     #[loop_tool(validate, name = "validate_calc")]
///     fn validate(&self, program: &Json, v: &mut Validation<CalcCode, CalcRisk>) {
///         if program["op"] != "add" {
///             v.error(CalcCode::UnknownOp, "/op", "only `add` exists").hint("use \"add\"");
///         }
///         for (i, _) in program["args"].as_array().into_iter().flatten().enumerate() {
///             v.step(format!("arg{i}"), CalcRisk::Safe);
///         }
///     }
/// #     #[loop_tool(execute, name = "run_calc")]
/// #     async fn run(&self, program: &Json, run: &mut Run) -> Finish {
/// #         let sum: f64 = program["args"].as_array().into_iter().flatten().filter_map(Json::as_f64).sum();
/// #         run.step("sum").output(json!(sum)).succeeded();
/// #         Finish::output(json!({ "sum": sum }))
/// #     }
/// # }
///
/// let mut kit = pilotage::testkit::Kit::new(Calc);
/// assert!(!kit.validate(&json!({"op": "mul", "args": [1, 2]})).valid); // from the error's severity
/// let verdict = kit.validate(&json!({"op": "add", "args": [1, 2]}));
/// assert_eq!(verdict.plan.map(|p| p.steps.len()), Some(2)); // a valid program's plan
/// ```
pub struct Validation<C: DiagnosticCode, R: RiskLevel> {
    request: ValidateRequest,
    core: ValidationCore,
    /// The call's cancellation, byte budget and diagnostics cap.
    bounds: Bounds,
    /// Where reports go once the sink is inert (cancelled, out of bytes, past the cap).
    scratch: Diagnostic,
    /// Where a step goes that is not kept (an inert sink, or a re-validation that counts steps).
    scratch_step: Option<PlanStep>,
    /// Whether plan steps are kept (see [`counting_steps`]).
    keep_plan: bool,
    _sets: PhantomData<(C, R)>,
}

impl<C: DiagnosticCode, R: RiskLevel> Validation<C, R> {
    /// A sink for `request`, under the bounds of the engine call running on this thread (none
    /// outside one).
    pub fn new(request: &ValidateRequest) -> Self {
        Validation {
            request: request.clone(),
            core: ValidationCore { risks: R::MEMBERS, ..ValidationCore::default() },
            bounds: Bounds::current(),
            scratch: Diagnostic::new(Severity::Warning, "constraint", "", ""),
            scratch_step: None,
            keep_plan: KEEP_PLAN.with(Cell::get),
            _sets: PhantomData,
        }
    }
    /// Whether the validation was cancelled or ran out of time: every report is then inert, so
    /// stop and return. Loops that report nothing should check it themselves.
    pub fn is_cancelled(&self) -> bool {
        self.bounds.signal.is_cancelled()
    }
    /// Whether reports are still kept: not cancelled, bytes left.
    fn live(&mut self, bytes: usize) -> bool {
        if self.core.bound_exceeded.is_some() || self.bounds.signal.is_cancelled() {
            return false;
        }
        if !self.bounds.budget.charge(bytes) {
            let limit = self.bounds.budget.limit();
            self.core.bound_exceeded = Some(format!("validation exceeded its memory bound of {limit} bytes"));
            return false;
        }
        true
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
    /// Report that this validation waited `waited` for a shared resource of the engine (a
    /// pooled connection) before its work: the caller sees it with the request's wait for the
    /// engine slot, in the result's `_meta` (`queued_ms`); it is not the validation's time.
    ///
    /// ```
    /// use pilotage_runtime::engine::Validation;
    /// use pilotage_runtime::model::closed_sets::{DiagnosticCode, RiskLevel};
    ///
    /// fn after_the_pool<C: DiagnosticCode, R: RiskLevel>(v: &mut Validation<C, R>, asked: std::time::Instant) {
    ///     // `asked` is when the validator asked its pool for a connection.
    ///     v.waited(asked.elapsed());
    /// }
    /// ```
    pub fn waited(&mut self, waited: std::time::Duration) {
        self.core.waited = self.core.waited.saturating_add(waited);
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
        let message = message.into();
        if !self.live(message.len() + 64) {
            return &mut self.scratch;
        }
        if self.core.diagnostics.len() >= self.bounds.max_diagnostics {
            self.core.left_out += 1;
            self.core.left_out_error |= severity == Severity::Error;
            return &mut self.scratch;
        }
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
    pub fn step(&mut self, id: impl AsRef<str>, risk: R) -> &mut PlanStep {
        let id = id.as_ref();
        let live = self.live(id.len() + 64);
        if live && (self.keep_plan || reserved_char(id).is_some()) {
            self.core.steps.push(PlanStep::new(id, risk));
            let last = self.core.steps.len() - 1;
            return &mut self.core.steps[last];
        }
        self.core.unkept_steps += usize::from(live);
        let step = self.scratch_step.get_or_insert_with(|| PlanStep::new(id, risk));
        step.reset(id, risk);
        step
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
        self.core.left_out_error || self.core.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }
    #[doc(hidden)] // the runtime's, not an engine author's
    /// Hand the findings to the runtime.
    pub fn finish(self) -> ValidationCore {
        self.core
    }
}
