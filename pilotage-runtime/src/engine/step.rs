//! One step being recorded: [`StepBuilder`], returned by [`Run::step`](super::run::Run::step).

use std::marker::PhantomData;
use std::time::Instant;

use serde_json::Value;

use super::finish::Failure;
use super::recorder::Recorder;
use crate::model::closed_sets::RunStatus;
use crate::model::outcome::Outcome;
use crate::model::trace::TraceStep;

/// A step recorded before its work finished; see [`StepBuilder::open`].
#[derive(Debug)]
#[must_use = "end the step with Run::finish_step"]
pub struct OpenStep {
    pub(super) index: Option<usize>,
    pub(super) started: Instant,
}

/// A step being recorded; end it with [`StepBuilder::succeeded`] or [`StepBuilder::failed`].
///
/// From [`Run::step`](super::Run::step): what it was given ([`input`](Self::input)), what it
/// produced ([`output`](Self::output)), which catalog entry it called ([`calls`](Self::calls)),
/// then how it ended. A failed step names its status, a reserved one
/// ([`Failure::Error`]) or one of the Language's `statuses`:
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
///         let args = program["args"].clone();
///         if args.as_array().is_some_and(|a| a.iter().any(|v| !v.is_number())) {
///             run.step("sum").input(args).failed(Failure::Error, "every argument is a number");
///             return Finish::error("a step failed");
///         }
///         run.step("sum").input(args).output(json!(0)).succeeded();
///         Finish::done()
///     }
/// # }
///
/// let ran = pilotage::testkit::Kit::new(Calc).execute(&json!({"op": "add", "args": ["x"]}));
/// assert!(!ran.ok());
/// assert_eq!(ran.ids(), ["sum"]);
/// ```
#[must_use = "finish the step with succeeded() or failed()"]
pub struct StepBuilder<'r, S: RunStatus> {
    recorder: &'r Recorder,
    id: String,
    calls: Option<String>,
    input: Option<Value>,
    output: Option<Value>,
    started: Instant,
    _status: PhantomData<S>,
}

impl<'r, S: RunStatus> StepBuilder<'r, S> {
    /// A builder for step `id`, recording into `recorder` (see `Run::step`).
    pub(super) fn new(recorder: &'r Recorder, id: &str) -> Self {
        StepBuilder {
            recorder,
            id: id.to_owned(),
            calls: None,
            input: None,
            output: None,
            started: Instant::now(),
            _status: PhantomData,
        }
    }
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
        let StepBuilder { recorder, id, calls, input, output, started, .. } = self;
        let now = Instant::now();
        let t_ms = u64::try_from(now.saturating_duration_since(started).as_millis()).unwrap_or(u64::MAX);
        let mut st = recorder.state();
        let qid = st.qualify(id);
        st.push_at(
            TraceStep {
                id: qid,
                calls,
                input: Some(input.unwrap_or(Value::Null)),
                output: Some(output.unwrap_or(Value::Null)),
                outcome,
                t_ms: Some(t_ms),
                decisions: None,
            },
            now,
        );
    }
    /// Record the step now, before the work it stands for (a sub-program call whose internal
    /// entries follow it keeps its place in execution order); end it with [`Run::finish_step`](super::Run::finish_step).
    pub fn open(self) -> OpenStep {
        let started = self.started;
        let mut st = self.recorder.state();
        let qid = st.qualify(self.id);
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
