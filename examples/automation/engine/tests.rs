//! Engine-level tests, through the public testkit (`pilotage::testkit::Kit`: the engine behind a
//! real server with a temporary durable store, every call over the protocol): every guide
//! example validates and runs (immediate examples succeed, rules install, and the trace of
//! every immediate run and test run is checked against its plan by the kit), and the closed
//! codes fire where the closed-sets guide says.

use pilotage::engine::Engine;
use pilotage::model::plan::ValidateResponse;
use pilotage::testkit::{fenced_blocks, findings, guide, guides, has, Kit, Ran};

#[path = "../../common/closed_sets_table.rs"]
mod closed_sets_table;

use pilotage::prelude::*;

use crate::engine::*;

fn context() -> Json {
    json!({"timezone": "Europe/Paris"})
}

fn kit() -> Kit<Automation> {
    Kit::new(Automation::new())
}

fn validate(kit: &mut Kit<Automation>, program: &Json) -> ValidateResponse {
    let mut args = kit.args(program);
    args["context"] = context();
    kit.validate_args(args).unwrap_or_else(|e| panic!("validation was refused: {e}"))
}

/// Run `program` in `mode` (`"immediate"` or `"deploy"`), as a test run when `test_run`.
fn execute(
    kit: &mut Kit<Automation>,
    program: &Json,
    input: Option<Json>,
    mode: &str,
    test_run: bool,
) -> Ran {
    let mut args = kit.args(program);
    args["context"] = context();
    args["mode"] = json!(mode);
    if test_run {
        args["test_run"] = json!(true);
    }
    if let Some(input) = input {
        args["input"] = input;
    }
    let ran = kit.execute_args(args).unwrap_or_else(|e| panic!("the run was refused: {e}"));
    assert!(ran.refused().is_empty(), "{:?}", ran.refused());
    ran
}

#[test]
fn every_guide_example_validates_and_runs() {
    let mut runs = 0;
    for (id, text) in guides(&Automation::new()) {
        for block in fenced_blocks(text, "json") {
            let doc: Json = serde_json::from_str(&block)
                .unwrap_or_else(|e| panic!("{id}: bad JSON block ({e}):\n{block}"));
            let mut kit = kit();
            let program =
                doc.get("automation").unwrap_or_else(|| panic!("{id}: not run arguments:\n{block}"));
            assert_eq!(doc["context"], context(), "{id}: examples use the sample context");
            let input = doc.get("input").cloned();
            match doc["mode"].as_str() {
                Some("immediate") => {
                    let ran = execute(&mut kit, program, input, "immediate", false);
                    assert_eq!(ran.status(), "success", "{id}: {:?}", ran.response);
                }
                Some("deploy") => {
                    let tried = execute(&mut kit, program, input.clone(), "deploy", true);
                    assert_eq!(tried.status(), "success", "{id}: {:?}", tried.response);
                    let ran = execute(&mut kit, program, input, "deploy", false);
                    assert_eq!(ran.status(), "success", "{id}: {:?}", ran.response);
                    assert_eq!(
                        ran.output(),
                        Some(&json!({"rule_id": "rule_1", "event": program["trigger"]["event"]}))
                    );
                    assert_eq!(ran.ids(), ["install"]);
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
    let sets = guide(&Automation::new(), "closed-sets");
    closed_sets_table::assert_closed_sets_listed(spec, sets);
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
    let mut kit = kit();
    let v = validate(&mut kit, &json!([]));
    assert!(has(&v.diagnostics, "malformed_program", ""), "{:?}", findings(&v.diagnostics));
    let v = validate(&mut kit, &json!({"steps": [{"id": "a", "call": "light_sett", "with": {}}]}));
    assert!(has(&v.diagnostics, "unknown_action", "/steps/0/call"), "{:?}", findings(&v.diagnostics));
    assert_eq!(v.diagnostics[0].hint.as_deref(), Some("close match: light_set"));
    let v = validate(&mut kit, &json!({"steps": [{"id": "a", "call": "motion"}]}));
    assert!(has(&v.diagnostics, "not_callable", "/steps/0/call"), "{:?}", findings(&v.diagnostics));
    let v = validate(
        &mut kit,
        &json!({"steps": [{"id": "a", "call": "light_set", "with": {"device": "hall_light", "level": 500, "x": 1}}]}),
    );
    assert!(has(&v.diagnostics, "missing_argument", "/steps/0/with"), "{:?}", findings(&v.diagnostics));
    assert!(has(&v.diagnostics, "type_mismatch", "/steps/0/with/level"), "{:?}", findings(&v.diagnostics));
    assert!(has(&v.diagnostics, "unexpected_argument", "/steps/0/with/x"), "{:?}", findings(&v.diagnostics));
    let v = validate(&mut kit, &json!({"trigger": {"event": "motoin"}, "steps": []}));
    assert!(has(&v.diagnostics, "unknown_event", "/trigger/event"), "{:?}", findings(&v.diagnostics));
    let v = validate(
        &mut kit,
        &json!({"steps": [
            {"id": "b", "branch": "$.context.timezone", "arms": [{"label": "x", "equals": "UTC", "steps": [{"id": "in", "set": 1}]}, {"label": "y", "steps": []}]},
            {"id": "after", "set": "$.steps.in.output"},
            {"id": "ev", "set": "$.event.room"},
            {"id": "a#1", "set": "$.steps.b.output"}
        ]}),
    );
    assert!(has(&v.diagnostics, "out_of_scope", "/steps/1/set"), "{:?}", findings(&v.diagnostics));
    assert!(has(&v.diagnostics, "unknown_reference", "/steps/2/set"), "{:?}", findings(&v.diagnostics));
    assert!(has(&v.diagnostics, "unknown_reference", "/steps/3/set"), "{:?}", findings(&v.diagnostics));
    assert!(has(&v.diagnostics, "constraint", "/steps/3/id"), "{:?}", findings(&v.diagnostics));
    let v = validate(
        &mut kit,
        &json!({"steps": [{"id": "b", "branch": "$.context.timezone", "arms": [{"label": "y", "steps": []}, {"label": "y", "equals": 1, "steps": []}]}]}),
    );
    assert!(has(&v.diagnostics, "malformed_arms", "/steps/0/arms/0"), "{:?}", findings(&v.diagnostics));
    assert!(has(&v.diagnostics, "malformed_arms", "/steps/0/arms/1/label"), "{:?}", findings(&v.diagnostics));
    let v = validate(
        &mut kit,
        &json!({"inputs": {"n": "int"}, "steps": [{"id": "a", "set": 1}, {"id": "a", "set": 2}]}),
    );
    assert!(has(&v.diagnostics, "invalid_input_type", "/inputs/n"), "{:?}", findings(&v.diagnostics));
    assert!(has(&v.diagnostics, "duplicate_step_id", "/steps/1/id"), "{:?}", findings(&v.diagnostics));
    assert!(has(&v.diagnostics, "unused_input", "/inputs/n"), "{:?}", findings(&v.diagnostics));
    let v = validate(&mut kit, &json!({"steps": [{"id": "a", "run": "prog_nothing"}]}));
    assert!(has(&v.diagnostics, "unknown_routine", "/steps/0/run"), "{:?}", findings(&v.diagnostics));
    let v = validate(&mut kit, &json!({"steps": [{"id": "a", "set": 1, "call": "wait"}]}));
    assert!(has(&v.diagnostics, "malformed_step", "/steps/0"), "{:?}", findings(&v.diagnostics));
}
