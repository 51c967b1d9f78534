//! The trace buffer of one Run, shared by the engine's [`Run`](super::run::Run) and the
//! runtime: the runtime keeps a clone, so the steps recorded so far survive an execution that a
//! bound cuts off. It also counts the work the step bound limits.

use std::sync::{Arc, Mutex, MutexGuard};

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
    pub(super) fn state(&self) -> MutexGuard<'_, RecorderState> {
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
    pub(super) fn should_stop(&self) -> bool {
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
    pub(super) fn qualified(&self, id: &str) -> String {
        let mut q = format!("{}{id}", self.prefix);
        for f in &self.loops {
            q.push('#');
            q.push_str(&f.iteration.to_string());
        }
        q
    }
    /// Count one unit of work; false (and `exceeded`) past the bound.
    pub(super) fn spend(&mut self) -> bool {
        if self.work >= self.max_steps {
            self.exceeded = true;
            return false;
        }
        self.work += 1;
        true
    }
    pub(super) fn push(&mut self, step: TraceStep) -> Option<usize> {
        self.started = true;
        if !self.spend() {
            return None;
        }
        self.steps.push(step);
        Some(self.steps.len() - 1)
    }
}
