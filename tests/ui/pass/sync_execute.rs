//! A synchronous execute method, default statuses, text-range locator, session retention.

use pilotage::engine::{ExecuteRequest, Recorder};
use pilotage::engine::Engine;
use pilotage::model::declaration::{ExecutionMode, Retention};
use pilotage::prelude::*;

#[derive(Clone, Copy, pilotage::Codes)]
enum Code {}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum Risk {
    #[risk(write)]
    Write,
}

struct Text;

#[pilotage::language(
    name = "text/2",
    title = "Text programs",
    program = "source",
    locator = "text-range",
    capabilities(validate, guides, execute),
    execution = "deploy",
    trace = "summary",
    retention = "session",
    guides = "../../../../tests/ui/guides/minimal/",
    codes = Code,
    risk = Risk,
)]
impl Text {
    #[loop_tool(validate, name = "text.validate")]
    fn check(&self, _source: &Json, _v: &mut Validation<Code, Risk>) {}

    #[loop_tool(execute, name = "text.run")]
    fn go(&self, _source: &Json, run: &mut Run) -> Finish {
        run.step("only").output(json!(1)).succeeded();
        Finish::done()
    }
}

fn main() {
    let spec = Text.language_spec();
    assert_eq!(spec.locator.as_str(), "text-range");
    assert_eq!(spec.retention, Some(Retention::Session));
    assert_eq!(spec.sets.statuses.len(), 6);
    let request = ExecuteRequest {
        run_id: "r".into(),
        program: std::sync::Arc::new(json!("text")),
        input: None,
        context: None,
        catalog: None,
        caller: Caller::new("me"),
        mode: ExecutionMode::Deploy,
        test_run: false,
        promoted: Default::default(),
    };
    let recorder = Recorder::new(10);
    let finish = futures_lite_block_on(Text.execute_program(&request, recorder.clone()));
    assert!(finish.outcome.ok());
    assert_eq!(recorder.steps().len(), 1);
}

/// Poll a future that never waits (the engine's execute here is synchronous).
fn futures_lite_block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::task::{Context, Poll, Waker};
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the future waited"),
    }
}
