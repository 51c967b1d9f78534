//! Outcomes, runs and the `execute` operation's engine-facing side (Part II §5.7, §6.5).
//!
//! An engine records each executed step through a typed [`Run`] and ends with a [`Finish`];
//! the runtime owns everything else: run ids, the processing order, `ok` and `error` (derived
//! from the status, so `error` is null exactly when `ok`), trace levels, identities of loop
//! iterations, storage.

use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::CatalogSnapshot;
use crate::closed_sets::{NoStatus, RunStatus};
use crate::language::{Caller, ExecutionMode};
use crate::trace::{Decision, Trace, TraceStep};
use crate::validate::{Diagnostic, Locator, Severity};

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
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::trace::present")]
    pub output: Option<Value>,
    /// The refusal's diagnostics (status `validation_error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<Diagnostic>>,
    /// The inline trace of a started Run at effective level summary or full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
}

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
    pub promoted: Arc<std::collections::BTreeMap<String, crate::promotion::SubProgram>>,
}

/// A failure status: a reserved one or one of the engine's own `S`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure<S: RunStatus = NoStatus> {
    /// The reserved `error`: failed, no more specific status applies.
    Error,
    /// The reserved `partial`: began, did not complete.
    Partial,
    /// An engine-defined status.
    Engine(S),
}

impl<S: RunStatus> Failure<S> {
    /// Wire name.
    pub fn wire(self) -> &'static str {
        match self {
            Failure::Error => "error",
            Failure::Partial => "partial",
            Failure::Engine(s) => s.wire(),
        }
    }
}

/// How an engine's execute method ends.
#[derive(Clone, Debug, PartialEq)]
pub enum Finish<S: RunStatus = NoStatus> {
    /// Completed; `output` when the Language produces one.
    Success(Option<Value>),
    /// Failed after starting.
    Failed(Failure<S>, String),
}

impl<S: RunStatus> Finish<S> {
    /// Success with an output value.
    pub fn output(v: Value) -> Self {
        Finish::Success(Some(v))
    }
    /// Success without an output.
    pub fn done() -> Self {
        Finish::Success(None)
    }
    /// The reserved `error` status.
    pub fn error(message: impl Into<String>) -> Self {
        Finish::Failed(Failure::Error, message.into())
    }
    /// The reserved `partial` status.
    pub fn partial(message: impl Into<String>) -> Self {
        Finish::Failed(Failure::Partial, message.into())
    }
    /// An engine-defined status.
    pub fn failed(status: S, message: impl Into<String>) -> Self {
        Finish::Failed(Failure::Engine(status), message.into())
    }
    /// The untyped form the runtime reads.
    pub fn into_core(self) -> FinishCore {
        match self {
            Finish::Success(output) => FinishCore { outcome: Outcome::success(), output },
            Finish::Failed(f, msg) => FinishCore { outcome: Outcome::failure(f.wire(), msg), output: None },
        }
    }
}

/// An untyped [`Finish`].
#[derive(Clone, Debug, PartialEq)]
pub struct FinishCore {
    /// The run outcome.
    pub outcome: Outcome,
    /// Output when ok.
    pub output: Option<Value>,
}

#[derive(Debug)]
struct LoopFrame {
    entry: usize,
    iteration: usize,
}

/// The shared trace buffer of one Run. The runtime keeps a clone, so the trace recorded so far
/// survives an execution that is cut off by a bound.
#[derive(Clone, Debug)]
pub struct Recorder(Arc<Mutex<RecorderState>>);

#[derive(Debug)]
struct RecorderState {
    steps: Vec<TraceStep>,
    loops: Vec<LoopFrame>,
    /// `call#n/` prefixes of the expanded sub-programs being recorded.
    prefix: String,
    /// The caller's prefix and loops, saved while a sub-program is expanded.
    outer: Vec<(String, Vec<LoopFrame>)>,
    max_steps: usize,
    /// Steps plus loop decisions recorded: the unit the step bound counts.
    work: usize,
    exceeded: bool,
    cancelled: bool,
    input_findings: Vec<Diagnostic>,
    started: bool,
}

impl Recorder {
    /// A recorder bounded to `max_steps` entries.
    pub fn new(max_steps: usize) -> Self {
        Recorder(Arc::new(Mutex::new(RecorderState {
            steps: Vec::new(),
            loops: Vec::new(),
            prefix: String::new(),
            outer: Vec::new(),
            max_steps,
            work: 0,
            exceeded: false,
            cancelled: false,
            input_findings: Vec::new(),
            started: false,
        })))
    }
    fn state(&self) -> MutexGuard<'_, RecorderState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// The steps recorded so far.
    pub fn steps(&self) -> Vec<TraceStep> {
        self.state().steps.clone()
    }
    /// Whether the step bound was exceeded (a step or decision was refused).
    pub fn exceeded(&self) -> bool {
        self.state().exceeded
    }
    /// Tell the engine to stop (the time bound ran out).
    pub fn cancel(&self) {
        self.state().cancelled = true;
    }
    fn should_stop(&self) -> bool {
        let st = self.state();
        st.cancelled || st.exceeded || st.work >= st.max_steps
    }
    /// Input findings reported before the first step (a refusal, not a started Run).
    pub fn input_findings(&self) -> Vec<Diagnostic> {
        self.state().input_findings.clone()
    }
    /// Whether any step was recorded (the Run started).
    pub fn started(&self) -> bool {
        self.state().started
    }
}

impl RecorderState {
    fn qualified(&self, id: &str) -> String {
        let mut q = format!("{}{id}", self.prefix);
        for f in &self.loops {
            q.push('#');
            q.push_str(&f.iteration.to_string());
        }
        q
    }
    /// Count one unit of work; false (and `exceeded`) past the bound.
    fn spend(&mut self) -> bool {
        if self.work >= self.max_steps {
            self.exceeded = true;
            return false;
        }
        self.work += 1;
        true
    }
    fn push(&mut self, step: TraceStep) -> Option<usize> {
        self.started = true;
        if !self.spend() {
            return None;
        }
        self.steps.push(step);
        Some(self.steps.len() - 1)
    }
}

/// An active loop, returned by [`Run::enter_loop`].
#[derive(Debug)]
#[must_use = "end the loop with Run::exit_loop"]
pub struct LoopHandle {
    id: String,
    depth: usize,
}

/// A step recorded before its work finished; see [`StepBuilder::open`].
#[derive(Debug)]
#[must_use = "end the step with Run::finish_step"]
pub struct OpenStep {
    index: Option<usize>,
    started: Instant,
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
pub struct Run<S: RunStatus = NoStatus> {
    request: ExecuteRequest,
    recorder: Recorder,
    _status: PhantomData<S>,
}

impl<S: RunStatus> Run<S> {
    /// A sink for `request` writing to `recorder`.
    pub fn new(request: &ExecuteRequest, recorder: Recorder) -> Self {
        Run { request: request.clone(), recorder, _status: PhantomData }
    }
    /// The Run id.
    pub fn run_id(&self) -> &str {
        &self.request.run_id
    }
    /// The request input.
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
    /// Who is asking.
    pub fn caller(&self) -> &Caller {
        &self.request.caller
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
        if let Some(entry) = step.index.and_then(|i| st.steps.get_mut(i)) {
            entry.t_ms = Some(t_ms);
            match result {
                Ok(output) => entry.output = Some(output),
                Err((failure, error)) => entry.outcome = Outcome::failure(failure.wire(), error),
            }
        }
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
        StepBuilder {
            run: self,
            id: id.to_owned(),
            calls: None,
            input: None,
            output: None,
            started: Instant::now(),
        }
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

/// A step being recorded; end it with [`StepBuilder::succeeded`] or [`StepBuilder::failed`].
#[must_use = "finish the step with succeeded() or failed()"]
pub struct StepBuilder<'r, S: RunStatus> {
    run: &'r mut Run<S>,
    id: String,
    calls: Option<String>,
    input: Option<Value>,
    output: Option<Value>,
    started: Instant,
}

impl<S: RunStatus> StepBuilder<'_, S> {
    /// The entry this step invokes.
    pub fn calls(mut self, entry: impl Into<String>) -> Self {
        self.calls = Some(entry.into());
        self
    }
    /// The step's input.
    pub fn input(mut self, v: Value) -> Self {
        self.input = Some(v);
        self
    }
    /// The step's output.
    pub fn output(mut self, v: Value) -> Self {
        self.output = Some(v);
        self
    }
    fn record(self, outcome: Outcome) {
        let t_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut st = self.run.recorder.state();
        let qid = st.qualified(&self.id);
        st.push(TraceStep {
            id: qid,
            calls: self.calls,
            input: Some(self.input.unwrap_or(Value::Null)),
            output: Some(self.output.unwrap_or(Value::Null)),
            outcome,
            t_ms: Some(t_ms),
            decisions: None,
        });
    }
    /// Record the step now, before the work it stands for (a sub-program call whose internal
    /// entries follow it keeps its place in execution order); end it with [`Run::finish_step`].
    pub fn open(self) -> OpenStep {
        let started = self.started;
        let mut st = self.run.recorder.state();
        let qid = st.qualified(&self.id);
        let index = st.push(TraceStep {
            id: qid,
            calls: self.calls,
            input: Some(self.input.unwrap_or(Value::Null)),
            output: Some(Value::Null),
            outcome: Outcome::success(),
            t_ms: None,
            decisions: None,
        });
        OpenStep { index, started }
    }

    /// The step succeeded.
    pub fn succeeded(self) {
        self.record(Outcome::success());
    }
    /// The step failed with `failure`.
    pub fn failed(self, failure: Failure<S>, error: impl Into<String>) {
        self.record(Outcome::failure(failure.wire(), error));
    }
}
