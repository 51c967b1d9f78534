//! The execute side an engine writes to (Part II §6.5): the typed [`Run`] sink and the
//! [`Finish`] an execute method ends with.
//!
//! An engine records each executed step through [`Run`] and ends with a [`Finish`]; the runtime
//! owns everything else: run ids, the processing order, `ok` and `error` (derived from the
//! status, so `error` is null exactly when `ok`), trace levels, identities of loop iterations,
//! storage.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::caller::Caller;
use super::catalog::CatalogSnapshot;
use super::finish::{Failure, Finish};
use super::recorder::{LoopFrame, Recorder, RecorderState};
use super::step::{OpenStep, StepBuilder};
use super::validation::ValidateRequest;
use crate::model::closed_sets::{NoStatus, RunStatus};
use crate::model::declaration::ExecutionMode;
use crate::model::diagnostic::{Diagnostic, Locator, Severity};
use crate::model::outcome::Outcome;
use crate::model::trace::{Decision, TraceStep};

/// What an engine's execute method receives (cheap to clone).
#[derive(Clone, Debug)]
pub struct ExecuteRequest {
    /// The Run id.
    pub run_id: String,
    /// The program (re-validated).
    pub program: Arc<Value>,
    /// Input, when supplied.
    pub input: Option<Arc<Value>>,
    /// Context that passed the context checks.
    pub context: Option<Arc<Value>>,
    /// The caller's snapshot.
    pub catalog: Option<Arc<CatalogSnapshot>>,
    /// Who is asking.
    pub caller: Caller,
    /// The resolved mode (`immediate` or `deploy`).
    pub mode: ExecutionMode,
    /// A side-effect-free test run.
    pub test_run: bool,
    /// The caller's promoted programs of this Language, by reference.
    pub promoted: Arc<std::collections::BTreeMap<String, SubProgram>>,
}

/// An active loop, returned by [`Run::enter_loop`].
#[derive(Debug)]
#[must_use = "end the loop with Run::exit_loop"]
pub struct LoopHandle {
    id: String,
    depth: usize,
}

/// Whether a run must stop; see [`Run::stop_signal`].
#[derive(Clone, Debug)]
pub struct StopSignal(Recorder);

impl StopSignal {
    /// True once the step bound is used up or the time bound ran out.
    pub fn is_set(&self) -> bool {
        self.0.should_stop()
    }
}

/// An expanded sub-program, returned by [`Run::enter_subprogram`].
#[derive(Debug)]
#[must_use = "end the sub-program with Run::exit_subprogram"]
pub struct SubprogramHandle {
    depth: usize,
}

/// The typed run sink an engine's execute method writes to. `S` is the engine's own status
/// set; step identities inside loops are qualified with `#n` automatically.
///
/// An execute method records each step as it runs it ([`Run::step`] gives a
/// [`StepBuilder`]) and answers a [`Finish`]; a long loop
/// that records nothing checks [`Run::is_cancelled`], since the Run turns inert once the
/// deadline, the byte budget or the client's cancellation fires:
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
/// #     fn validate(&self, program: &Json, v: &mut Validation<CalcCode, CalcRisk>) {
/// #         if program["op"] != "add" { v.error(CalcCode::UnknownOp, "/op", "only `add` exists"); }
/// #         v.step("sum", CalcRisk::Safe);
/// #     }
/// #     #[loop_tool(execute, name = "run_calc")]
///     async fn run(&self, program: &Json, run: &mut Run) -> Finish {
///         let mut sum = 0.0;
///         for arg in program["args"].as_array().into_iter().flatten() {
///             if run.is_cancelled() {
///                 return Finish::partial("stopped");
///             }
///             sum += arg.as_f64().unwrap_or(0.0);
///         }
///         run.step("sum").input(program["args"].clone()).output(json!(sum)).succeeded();
///         Finish::output(json!({ "sum": sum }))
///     }
/// # }
///
/// let ran = pilotage::testkit::Kit::new(Calc).execute(&json!({"op": "add", "args": [1, 2]}));
/// assert!(ran.ok());
/// assert_eq!(ran.ids(), ["sum"]);
/// assert_eq!(ran.output(), Some(&json!({"sum": 3.0})));
/// ```
pub struct Run<S: RunStatus = NoStatus> {
    request: ExecuteRequest,
    recorder: Recorder,
    _status: PhantomData<S>,
}

impl<S: RunStatus> Run<S> {
    /// A sink for `request` writing to `recorder` (the runtime makes the Runs).
    #[doc(hidden)]
    pub fn new(request: &ExecuteRequest, recorder: Recorder) -> Self {
        Run { request: request.clone(), recorder, _status: PhantomData }
    }
    /// Report that this Run waited `waited` for a shared resource of the engine (a pooled
    /// connection, a lock on a shared file) before its work: the caller sees it with the wait
    /// for the engine slot, in the result's `_meta` and the trace's `stats.queued_ms`.
    pub fn waited(&mut self, waited: Duration) {
        // Counted in whole microseconds, as the runtime counts the waits for slots.
        let waited = Duration::from_micros(u64::try_from(waited.as_micros()).unwrap_or(u64::MAX));
        let mut st = self.recorder.state();
        st.waited = st.waited.saturating_add(waited);
    }
    /// How long this Run's request waited so far: for the server's engine slots (its snapshot,
    /// validation and run calls) and what the engine reported with [`Run::waited`]. None of it
    /// is charged to the Run's time bound.
    pub fn queued(&self) -> Duration {
        let st = self.recorder.state();
        st.signal.queued().saturating_add(st.waited)
    }
    /// The Run id.
    pub fn run_id(&self) -> &str {
        &self.request.run_id
    }
    /// The caller's `input`: always a JSON object when present (the tool's `inputSchema`
    /// advertises `{"type": "object"}`, and any other value is refused with JSON-RPC `-32602`
    /// before the engine runs); `None` when the call gave none. With `no_input` on the execute
    /// tool, a call that gives one is refused.
    pub fn input(&self) -> Option<&Value> {
        self.request.input.as_deref()
    }
    /// The validated context.
    pub fn context(&self) -> Option<&Value> {
        self.request.context.as_deref()
    }
    /// The caller's catalog snapshot.
    pub fn catalog(&self) -> Option<&CatalogSnapshot> {
        self.request.catalog.as_deref()
    }
    /// Whether [`Run::catalog`] may be a snapshot the engine kept without proving it current,
    /// because its `catalog` method deferred that to the Run ([`defer_to_run`]). Such a Run
    /// checks, before any step and atomically with its first effect (in the same transaction),
    /// that the catalog is still the snapshot's; if it is not, it returns
    /// [`Run::catalog_moved`] without doing anything.
    ///
    /// [`defer_to_run`]: super::confirm::defer_to_run
    pub fn catalog_unconfirmed(&self) -> bool {
        self.recorder.state().unconfirmed
    }
    /// The catalog is no longer the one of this Run's unconfirmed snapshot, found before any
    /// step: the runtime takes a current snapshot, admits the program against it (validation,
    /// `expected_catalog_version`) and runs it once more, with a snapshot proven current. The
    /// returned finish is what the caller sees only where that cannot happen: the snapshot was
    /// confirmed already ([`Run::catalog_unconfirmed`] is false), or a step was recorded.
    ///
    /// ```
    /// use pilotage::engine::{ExecuteRequest, Failure, Recorder, Run};
    /// use pilotage::prelude::*;
    /// # let request = ExecuteRequest { run_id: "run_1".into(), program: std::sync::Arc::new(json!({})),
    /// #     input: None, context: None, catalog: None, caller: pilotage::engine::Caller::new("anonymous"),
    /// #     mode: pilotage::model::declaration::ExecutionMode::Immediate, test_run: false, promoted: Default::default() };
    /// let recorder = Recorder::new(10);
    /// let mut run: Run = Run::new(&request, recorder.clone());
    /// // A snapshot the Run was not asked to confirm: moving it is the Run's own failure.
    /// assert!(!run.catalog_unconfirmed());
    /// assert_eq!(run.catalog_moved(), Finish::Failed(Failure::Error, "the catalog moved before the run began; validate the program again".into()));
    /// assert!(!recorder.moved());
    /// recorder.unconfirmed();
    /// run.catalog_moved();
    /// assert!(recorder.moved());
    /// ```
    pub fn catalog_moved(&mut self) -> Finish<S> {
        let mut st = self.recorder.state();
        if st.unconfirmed && !st.started {
            st.moved = true;
        }
        Finish::error("the catalog moved before the run began; validate the program again")
    }
    /// Who is asking.
    pub fn caller(&self) -> &Caller {
        &self.request.caller
    }
    /// The request to check this Run's program again as validate did, for an engine that
    /// re-checks it before its first step ([`Validation::new`]): the same program, context,
    /// catalog snapshot and caller, shared with the Run, not copied (a snapshot can be the
    /// whole catalog).
    ///
    /// [`Validation::new`]: super::validation::Validation::new
    pub fn validation_request(&self) -> ValidateRequest {
        ValidateRequest {
            program: self.request.program.clone(),
            context: self.request.context.clone(),
            catalog: self.request.catalog.clone(),
            caller: self.request.caller.clone(),
        }
    }
    /// `immediate` or `deploy`.
    pub fn mode(&self) -> ExecutionMode {
        self.request.mode
    }
    /// Whether this is a side-effect-free test run.
    pub fn is_test_run(&self) -> bool {
        self.request.test_run
    }
    /// End a step opened with [`StepBuilder::open`]: its output, or its failure.
    pub fn finish_step(&mut self, step: OpenStep, result: Result<Value, (Failure<S>, String)>) {
        let t_ms = u64::try_from(step.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut st = self.recorder.state();
        let fits = match &result {
            Ok(output) => st.charge(Some(output)),
            Err(_) => true,
        };
        if let Some(entry) = step.index.and_then(|i| st.steps.get_mut(i)).filter(|_| fits) {
            entry.t_ms = Some(t_ms);
            match result {
                Ok(output) => entry.output = Some(output),
                Err((failure, error)) => entry.outcome = Outcome::failure(failure.wire(), error),
            }
        }
    }

    /// Whether the Run was cancelled or ran out of time: every recording call is then inert.
    /// Loops that record nothing should check it (or [`Run::should_stop`]) themselves.
    pub fn is_cancelled(&self) -> bool {
        self.recorder.signal().is_cancelled()
    }

    /// The Run's byte budget: charge the values the engine builds (resolved references,
    /// copies of large inputs) with [`Budget::charge_value`](super::Budget::charge_value), the
    /// memory they take, before building them, so a program cannot make the server hold
    /// unbounded memory; a failed charge means stop. Step inputs and outputs are charged by the
    /// runtime the same way.
    pub fn budget(&self) -> super::call::Budget {
        self.recorder.budget()
    }

    /// A handle that tells, from any thread, whether the run must stop (bounds exceeded or time
    /// up): hand it to blocking engine code, e.g. a database progress callback.
    pub fn stop_signal(&self) -> StopSignal {
        StopSignal(self.recorder.clone())
    }

    /// The body of the caller's promoted program `reference`, to call as a sub-program
    /// (check [`Run::promoted_drift`] first: a drifted program must not run).
    pub fn promoted(&self, reference: &str) -> Option<Arc<Value>> {
        self.request.promoted.get(reference).map(|p| p.body.clone())
    }

    /// The entries referenced by promoted program `reference` whose load-bearing fields changed
    /// since promotion (the runtime's baseline check, for sub-program calls); empty when the
    /// program is still runnable or unknown.
    pub fn promoted_drift(&self, reference: &str) -> Vec<String> {
        self.request.promoted.get(reference).map(|p| p.drifted.clone()).unwrap_or_default()
    }

    /// Start recording the internal steps of an expanded sub-program called by step `call_id`
    /// (`trace_subprogram: "expanded"`): until [`Run::exit_subprogram`], ids are prefixed with
    /// the call's iteration-qualified id and `/`, and loop counters start afresh.
    pub fn enter_subprogram(&mut self, call_id: &str) -> SubprogramHandle {
        let mut st = self.recorder.state();
        let prefix = format!("{}/", st.qualified(call_id));
        let loops = std::mem::take(&mut st.loops);
        let saved = std::mem::replace(&mut st.prefix, prefix);
        st.outer.push((saved, loops));
        SubprogramHandle { depth: st.outer.len() }
    }

    /// Stop expanding the sub-program entered with `handle`.
    pub fn exit_subprogram(&mut self, handle: SubprogramHandle) {
        let mut st = self.recorder.state();
        while st.outer.len() >= handle.depth {
            match st.outer.pop() {
                Some((prefix, loops)) => {
                    st.prefix = prefix;
                    st.loops = loops;
                }
                None => break,
            }
        }
    }

    /// Whether to stop now: the step bound (steps and loop decisions) is used up, or the time
    /// bound ran out. Check it before every step with effects and every loop iteration.
    pub fn should_stop(&self) -> bool {
        self.recorder.should_stop()
    }

    /// Refuse the input before any step ran: the Run becomes a `validation_error` refusal with
    /// an `input_binding` diagnostic at `path` (a pointer into `input`). After a step ran, the
    /// runtime turns it into a reserved `error` outcome instead, since effects may have occurred.
    pub fn reject_input(&mut self, path: impl Into<Locator>, message: impl Into<String>) {
        let mut st = self.recorder.state();
        st.input_findings.push(Diagnostic::new(Severity::Error, "input_binding", path, message));
    }

    /// Start recording a step with program step id `id`.
    pub fn step(&mut self, id: &str) -> StepBuilder<'_, S> {
        StepBuilder::new(&self.recorder, id)
    }

    /// Record a branch activation that took arm `label`.
    pub fn branch(&mut self, id: &str, label: &str, because: impl Into<String>) {
        let mut st = self.recorder.state();
        let qid = st.qualified(id);
        st.push(TraceStep {
            id: qid,
            calls: None,
            input: None,
            output: None,
            outcome: Outcome::success(),
            t_ms: None,
            decisions: Some(vec![Decision {
                at: id.to_owned(),
                took: label.to_owned(),
                because: because.into(),
            }]),
        });
    }

    /// Record a loop activation; body steps recorded until [`Run::exit_loop`] are qualified
    /// with this loop's iteration number once [`Run::next_iteration`] is called.
    pub fn enter_loop(&mut self, id: &str) -> LoopHandle {
        let mut st = self.recorder.state();
        let qid = st.qualified(id);
        let entry = st.push(TraceStep {
            id: qid,
            calls: None,
            input: None,
            output: None,
            outcome: Outcome::success(),
            t_ms: None,
            decisions: Some(vec![]),
        });
        let depth = st.loops.len();
        st.loops.push(LoopFrame { entry: entry.unwrap_or(usize::MAX), iteration: 0 });
        LoopHandle { id: id.to_owned(), depth }
    }

    fn decide(st: &mut RecorderState, handle: &LoopHandle, took: &str, because: String) {
        if !st.spend() {
            return;
        }
        if let Some(frame) = st.loops.get(handle.depth) {
            let entry = frame.entry;
            if let Some(Some(d)) = st.steps.get_mut(entry).map(|s| s.decisions.as_mut()) {
                d.push(Decision { at: handle.id.clone(), took: took.to_owned(), because });
            }
        }
    }

    /// Record a `continue` decision and start the next iteration.
    pub fn next_iteration(&mut self, handle: &LoopHandle, because: impl Into<String>) {
        let mut st = self.recorder.state();
        Self::decide(&mut st, handle, "continue", because.into());
        st.loops.truncate(handle.depth + 1);
        if let Some(f) = st.loops.get_mut(handle.depth) {
            f.iteration += 1;
        }
    }

    /// Record the `exit` decision and close the loop.
    pub fn exit_loop(&mut self, handle: LoopHandle, because: impl Into<String>) {
        let mut st = self.recorder.state();
        Self::decide(&mut st, &handle, "exit", because.into());
        st.loops.truncate(handle.depth);
    }

    /// Record a branch activation that failed before choosing an arm (for example when its
    /// condition could not be evaluated): a control-flow entry with no decision.
    pub fn fail_branch(&mut self, id: &str, failure: Failure<S>, error: impl Into<String>) {
        let mut st = self.recorder.state();
        let qid = st.qualified(id);
        st.push(TraceStep {
            id: qid,
            calls: None,
            input: None,
            output: None,
            outcome: Outcome::failure(failure.wire(), error),
            t_ms: None,
            decisions: Some(vec![]),
        });
    }

    /// Mark the loop entry as failed (for example when its list could not be evaluated).
    pub fn fail_loop(&mut self, handle: LoopHandle, failure: Failure<S>, error: impl Into<String>) {
        let mut st = self.recorder.state();
        if let Some(entry) = st.loops.get(handle.depth).map(|f| f.entry) {
            if let Some(s) = st.steps.get_mut(entry) {
                s.outcome = Outcome::failure(failure.wire(), error);
            }
        }
        st.loops.truncate(handle.depth);
    }
}

/// A promoted program as a run sees it, to call as a sub-program.
#[derive(Clone, Debug)]
pub struct SubProgram {
    /// The immutable body.
    pub body: Arc<Value>,
    /// Referenced entries whose load-bearing fields changed since promotion: when not empty,
    /// the program must not run (its reference is terminal; promote it again).
    pub drifted: Vec<String>,
}
