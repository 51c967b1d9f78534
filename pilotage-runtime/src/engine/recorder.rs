//! The trace buffer of one Run, shared by the engine's [`Run`](super::run::Run) and the
//! runtime: the runtime keeps a clone, so the steps recorded so far survive an execution that a
//! bound cuts off. It also counts the work the step bound limits.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::call::{Bounds, Budget, Signal};
use super::memory::value_memory;
use super::progress::Progress;
use crate::model::diagnostic::Diagnostic;
use crate::model::trace::TraceStep;

#[derive(Debug)]
pub(super) struct LoopFrame {
    pub(super) entry: usize,
    pub(super) iteration: usize,
}

/// The shared trace buffer of one Run. The runtime keeps a clone, so the trace recorded so far
/// survives an execution that is cut off by a bound.
#[derive(Clone, Debug)]
pub struct Recorder(Arc<Mutex<RecorderState>>);

#[derive(Debug)]
pub(super) struct RecorderState {
    pub(super) steps: Vec<TraceStep>,
    pub(super) loops: Vec<LoopFrame>,
    /// `call#n/` prefixes of the expanded sub-programs being recorded.
    pub(super) prefix: String,
    /// The caller's prefix and loops, saved while a sub-program is expanded.
    pub(super) outer: Vec<(String, Vec<LoopFrame>)>,
    pub(super) max_steps: usize,
    /// Steps plus loop decisions recorded: the unit the step bound counts.
    pub(super) work: usize,
    pub(super) exceeded: bool,
    pub(super) cancelled: bool,
    pub(super) input_findings: Vec<Diagnostic>,
    pub(super) started: bool,
    /// The engine call's cancellation and deadline: once it fires, recording is inert.
    pub(super) signal: Signal,
    /// Bytes of trace the Run may hold.
    pub(super) budget: Budget,
    /// Who is told of each entry recorded (progress notifications, a task's record).
    pub(super) progress: Option<Progress>,
    /// Time the engine reported its Run waited for a shared resource (`Run::waited`).
    pub(super) waited: Duration,
    /// The Run's catalog snapshot is one the engine kept without proving it current
    /// ([`super::confirm`]): the Run confirms it.
    pub(super) unconfirmed: bool,
    /// The Run found its unconfirmed snapshot moved before any step (`Run::catalog_moved`).
    pub(super) moved: bool,
}

impl Recorder {
    /// A recorder bounded to `max_steps` entries, under the bounds of the engine call running
    /// on this thread (none outside one).
    pub fn new(max_steps: usize) -> Self {
        Self::bounded(max_steps, &Bounds::current())
    }

    /// A recorder bounded to `max_steps` entries and `bounds`.
    pub fn bounded(max_steps: usize, bounds: &Bounds) -> Self {
        Recorder(Arc::new(Mutex::new(RecorderState {
            signal: bounds.signal.clone(),
            budget: bounds.budget.clone(),
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
            progress: None,
            waited: Duration::ZERO,
            unconfirmed: false,
            moved: false,
        })))
    }
    pub(super) fn state(&self) -> MutexGuard<'_, RecorderState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// The steps recorded so far.
    pub fn steps(&self) -> Vec<TraceStep> {
        self.state().steps.clone()
    }
    /// The steps recorded so far, taken out of the recorder (which keeps none): for the
    /// runtime once the Run is over, so the trace is not copied.
    pub fn take_steps(&self) -> Vec<TraceStep> {
        std::mem::take(&mut self.state().steps)
    }
    /// How many trace entries were recorded so far.
    pub fn recorded(&self) -> usize {
        self.state().steps.len()
    }
    /// Whether the step bound was exceeded (a step or decision was refused).
    pub fn exceeded(&self) -> bool {
        self.state().exceeded
    }
    /// Whether the byte budget ran out (a step was refused for its size).
    pub fn bytes_exceeded(&self) -> bool {
        self.state().budget.is_exhausted()
    }
    /// Tell the engine to stop (the time bound ran out, or the Run was cancelled).
    pub fn cancel(&self) {
        let mut st = self.state();
        st.cancelled = true;
        st.signal.cancel();
    }
    /// The signal the Run's engine call is bounded by.
    pub fn signal(&self) -> Signal {
        self.state().signal.clone()
    }
    /// The Run's byte budget.
    pub fn budget(&self) -> Budget {
        self.state().budget.clone()
    }
    pub(super) fn should_stop(&self) -> bool {
        self.state().should_stop()
    }
    /// Input findings reported before the first step (a refusal, not a started Run).
    pub fn input_findings(&self) -> Vec<Diagnostic> {
        self.state().input_findings.clone()
    }
    /// Tell `progress` of every entry recorded from now on.
    pub fn observe(&self, progress: Progress) {
        self.state().progress = Some(progress);
    }
    /// The Run is over: its observer gets the closing tick, if the last entry was not reported.
    pub fn close_progress(&self) {
        let mut st = self.state();
        let last = st.steps.last().map(|s| s.id.clone());
        if let Some(p) = st.progress.as_mut() {
            p.close(last.as_deref());
        }
    }
    /// Time the engine reported its Run waited for a shared resource (a pooled connection),
    /// beyond the engine slot the runtime waited for (see `Run::waited`).
    pub fn waited(&self) -> Duration {
        self.state().waited
    }
    /// The Run's catalog snapshot was not proven current: the Run confirms it
    /// (`Run::catalog_unconfirmed`).
    pub fn unconfirmed(&self) {
        self.state().unconfirmed = true;
    }
    /// The runtime found, before the Run began, that the snapshot it gave the Run is not the
    /// engine's current one ([`Recorder::moved`] is then true: nothing ran).
    pub(crate) fn found_moved(&self) {
        let mut st = self.state();
        if !st.started {
            st.moved = true;
        }
    }
    /// Whether the Run found its unconfirmed catalog snapshot moved before any step: nothing
    /// ran, and the program may be admitted again against a current snapshot.
    pub fn moved(&self) -> bool {
        let st = self.state();
        st.moved && !st.started
    }
    /// Whether any step was recorded (the Run started).
    pub fn started(&self) -> bool {
        self.state().started
    }
}

impl RecorderState {
    pub(super) fn qualified(&self, id: &str) -> String {
        self.qualify(id.to_owned())
    }
    /// [`RecorderState::qualified`] of an id the caller owns, which outside loops and
    /// expanded sub-programs is the id itself, not a copy.
    pub(super) fn qualify(&self, id: String) -> String {
        if self.prefix.is_empty() && self.loops.is_empty() {
            return id;
        }
        let mut q = format!("{}{id}", self.prefix);
        for f in &self.loops {
            q.push('#');
            q.push_str(&f.iteration.to_string());
        }
        q
    }
    pub(super) fn should_stop(&self) -> bool {
        self.cancelled
            || self.exceeded
            || self.work >= self.max_steps
            || self.signal.is_cancelled()
            || self.budget.is_exhausted()
    }
    /// Count one unit of work; false past the step bound (then `exceeded`), and once the call
    /// is cancelled or its bytes are spent (recording is then inert).
    pub(super) fn spend(&mut self) -> bool {
        self.spend_at(Instant::now())
    }
    /// [`RecorderState::spend`] at `now`, for a caller that has just read the clock.
    fn spend_at(&mut self, now: Instant) -> bool {
        if self.cancelled || self.signal.is_cancelled_at(now) || self.budget.is_exhausted() {
            return false;
        }
        if self.work >= self.max_steps {
            self.exceeded = true;
            return false;
        }
        self.work += 1;
        true
    }
    /// Charge the memory a value adds to the trace; false once the budget is spent.
    pub(super) fn charge(&mut self, v: Option<&serde_json::Value>) -> bool {
        self.budget.charge(v.map_or(0, value_memory))
    }
    pub(super) fn push(&mut self, step: TraceStep) -> Option<usize> {
        self.push_at(step, Instant::now())
    }
    /// [`RecorderState::push`] at `now`, for a step that has just read the clock for its time.
    pub(super) fn push_at(&mut self, step: TraceStep, now: Instant) -> Option<usize> {
        self.started = true;
        if !self.spend_at(now) {
            return None;
        }
        // The entry, its strings, its input and its output, charged at once, as the memory they
        // hold (and as its kept record will count them).
        if !self.budget.charge(super::memory::step_memory(&step)) {
            return None;
        }
        if let Some(p) = self.progress.as_mut() {
            p.recorded(&step.id);
        }
        self.steps.push(step);
        Some(self.steps.len() - 1)
    }
}
