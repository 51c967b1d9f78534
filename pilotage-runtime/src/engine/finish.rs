//! How an engine's execute method ends: [`Finish`], with a [`Failure`] status that is a reserved
//! one or one of the engine's own.

use serde_json::Value;

use crate::model::closed_sets::{NoStatus, RunStatus};
use crate::model::outcome::Outcome;

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

/// How an engine's execute method ends. A failed run is a `Finish` too, never an `Err`: the
/// runtime derives `ok`, `status` and `outcome.error` from it.
///
/// ```
/// use pilotage::prelude::*;
/// use pilotage::engine::Failure;
///
/// let done: Finish = Finish::output(json!({"sum": 3}));
/// assert_eq!(done, Finish::Success(Some(json!({"sum": 3}))));
/// let failed: Finish = Finish::error("the table is locked");
/// assert_eq!(failed, Finish::Failed(Failure::Error, "the table is locked".into()));
/// let stopped: Finish = Finish::partial("stopped after 3 of 5 statements");
/// assert!(matches!(stopped, Finish::Failed(Failure::Partial, _)));
/// ```
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
    #[doc(hidden)] // the runtime's, not an engine author's
    /// The untyped form the runtime reads.
    pub fn into_core(self) -> FinishCore {
        match self {
            Finish::Success(output) => FinishCore { outcome: Outcome::success(), output },
            Finish::Failed(f, msg) => FinishCore { outcome: Outcome::failure(f.wire(), msg), output: None },
        }
    }
}

#[doc(hidden)] // the runtime's, not an engine author's
/// An untyped [`Finish`].
#[derive(Clone, Debug, PartialEq)]
pub struct FinishCore {
    /// The run outcome.
    pub outcome: Outcome,
    /// Output when ok.
    pub output: Option<Value>,
}
