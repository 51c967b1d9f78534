//! Engine-level tests: every guide example validates and runs (immediate examples succeed,
//! rules install, and their test runs correspond to their plans), and the closed codes fire
//! where the closed-sets guide says.

use pilotage::engine::Engine;
use pilotage::engine::FinishCore;
use pilotage::model::correspondence;
use pilotage::model::declaration::ExecutionMode;
use pilotage::model::plan::ValidateResponse;
use pilotage::model::trace::{Trace, TraceLevelWire, TraceStep};

#[allow(dead_code)] // each engine's tests use their part of it
#[path = "../../common/engine_harness.rs"]
mod harness;

use harness::{codes, fenced_blocks, has};

use pilotage::prelude::*;

use crate::engine::*;

fn context() -> Json {
    json!({"timezone": "Europe/Paris"})
}

fn validate(engine: &Automation, program: &Json) -> ValidateResponse {
    harness::validate(engine, program, Some(&context()))
}

fn execute(
    engine: &Automation,
    program: &Json,
    input: Option<Json>,
    mode: ExecutionMode,
    test_run: bool,
) -> (FinishCore, Vec<TraceStep>) {
    let ran = harness::execute(engine, program, input, Some(&context()), mode, test_run);
    assert!(ran.refused.is_empty(), "{:?}", ran.refused);
    if mode == ExecutionMode::Immediate || test_run {
        let trace = Trace {
            run_id: "run_test".into(),
            level: TraceLevelWire::Full,
            steps: ran.steps.clone(),
            stats: None,
        };
        let plan = ran.plan.expect("a valid program has a plan");
        correspondence::check(&plan, &trace, ran.finish.outcome.ok())
            .unwrap_or_else(|p| panic!("trace does not correspond to the plan: {p:?}\n{trace:#?}"));
    }
    (ran.finish, ran.steps)
}

#[test]
fn every_guide_example_validates_and_runs() {
    let mut runs = 0;
    for (id, text) in harness::guides::<Automation>() {
        for block in fenced_blocks(text, "json") {
            let doc: Json = serde_json::from_str(&block)
                .unwrap_or_else(|e| panic!("{id}: bad JSON block ({e}):\n{block}"));
            let engine = Automation::new();
            let program =
                doc.get("automation").unwrap_or_else(|| panic!("{id}: not run arguments:\n{block}"));
            assert_eq!(doc["context"], context(), "{id}: examples use the sample context");
            let input = doc.get("input").cloned();
            match doc["mode"].as_str() {
                Some("immediate") => {
                    let (finish, _) = execute(&engine, program, input, ExecutionMode::Immediate, false);
                    assert_eq!(finish.outcome.status(), "success", "{id}: {finish:?}");
                }
                Some("deploy") => {
                    let (tried, _) = execute(&engine, program, input.clone(), ExecutionMode::Deploy, true);
                    assert_eq!(tried.outcome.status(), "success", "{id}: {tried:?}");
                    let (finish, steps) = execute(&engine, program, input, ExecutionMode::Deploy, false);
                    assert_eq!(finish.outcome.status(), "success", "{id}: {finish:?}");
                    assert_eq!(
                        finish.output,
                        Some(json!({"rule_id": "rule_1", "event": program["trigger"]["event"]}))
                    );
                    assert_eq!(steps.len(), 1);
                    assert_eq!(steps[0].id, "install");
                }
                other => panic!("{id}: unknown mode {other:?}"),
            }
            runs += 1;
        }
    }
    assert!(runs >= 2, "the guides carry runnable examples");
}

#[test]
fn the_core_guide_is_small_and_the_closed_sets_guide_names_every_member() {
    let spec = Automation::new().language_spec();
    let core = spec.guides.iter().find(|g| g.id == "core").unwrap();
    assert!(core.body.len() <= 8192, "core guide is {} bytes", core.body.len());
    let sets = harness::guide::<Automation>("closed-sets");
    harness::assert_closed_sets_listed(spec, sets);
    for s in &spec.sets.statuses {
        assert!(
            sets.contains(&format!("| `{}` | {} |", s.name, s.ok)),
            "closed-sets guide lacks status {}",
            s.name
        );
    }
}

#[test]
fn closed_codes_fire_where_documented() {
    let e = Automation::new();
    let v = validate(&e, &json!([]));
    assert!(has(&v, "malformed_program", ""), "{:?}", codes(&v));
    let v = validate(&e, &json!({"steps": [{"id": "a", "call": "light_sett", "with": {}}]}));
    assert!(has(&v, "unknown_action", "/steps/0/call"), "{:?}", codes(&v));
    assert_eq!(v.diagnostics[0].hint.as_deref(), Some("close match: light_set"));
    let v = validate(&e, &json!({"steps": [{"id": "a", "call": "motion"}]}));
    assert!(has(&v, "not_callable", "/steps/0/call"), "{:?}", codes(&v));
    let v = validate(
        &e,
        &json!({"steps": [{"id": "a", "call": "light_set", "with": {"device": "hall_light", "level": 500, "x": 1}}]}),
    );
    assert!(has(&v, "missing_argument", "/steps/0/with"), "{:?}", codes(&v));
    assert!(has(&v, "type_mismatch", "/steps/0/with/level"), "{:?}", codes(&v));
    assert!(has(&v, "unexpected_argument", "/steps/0/with/x"), "{:?}", codes(&v));
    let v = validate(&e, &json!({"trigger": {"event": "motoin"}, "steps": []}));
    assert!(has(&v, "unknown_event", "/trigger/event"), "{:?}", codes(&v));
    let v = validate(
        &e,
        &json!({"steps": [
            {"id": "b", "branch": "$.context.timezone", "arms": [{"label": "x", "equals": "UTC", "steps": [{"id": "in", "set": 1}]}, {"label": "y", "steps": []}]},
            {"id": "after", "set": "$.steps.in.output"},
            {"id": "ev", "set": "$.event.room"},
            {"id": "a#1", "set": "$.steps.b.output"}
        ]}),
    );
    assert!(has(&v, "out_of_scope", "/steps/1/set"), "{:?}", codes(&v));
    assert!(has(&v, "unknown_reference", "/steps/2/set"), "{:?}", codes(&v));
    assert!(has(&v, "unknown_reference", "/steps/3/set"), "{:?}", codes(&v));
    assert!(has(&v, "constraint", "/steps/3/id"), "{:?}", codes(&v));
    let v = validate(
        &e,
        &json!({"steps": [{"id": "b", "branch": "$.context.timezone", "arms": [{"label": "y", "steps": []}, {"label": "y", "equals": 1, "steps": []}]}]}),
    );
    assert!(has(&v, "malformed_arms", "/steps/0/arms/0"), "{:?}", codes(&v));
    assert!(has(&v, "malformed_arms", "/steps/0/arms/1/label"), "{:?}", codes(&v));
    let v = validate(
        &e,
        &json!({"inputs": {"n": "int"}, "steps": [{"id": "a", "set": 1}, {"id": "a", "set": 2}]}),
    );
    assert!(has(&v, "invalid_input_type", "/inputs/n"), "{:?}", codes(&v));
    assert!(has(&v, "duplicate_step_id", "/steps/1/id"), "{:?}", codes(&v));
    assert!(has(&v, "unused_input", "/inputs/n"), "{:?}", codes(&v));
    let v = validate(&e, &json!({"steps": [{"id": "a", "run": "prog_nothing"}]}));
    assert!(has(&v, "unknown_routine", "/steps/0/run"), "{:?}", codes(&v));
    let v = validate(&e, &json!({"steps": [{"id": "a", "set": 1, "call": "wait"}]}));
    assert!(has(&v, "malformed_step", "/steps/0"), "{:?}", codes(&v));
}
