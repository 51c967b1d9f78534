//! Engine-level tests: every guide example validates and runs (immediate examples succeed,
//! rules install, and their test runs correspond to their plans), and the closed codes fire
//! where the closed-sets guide says.

use std::sync::Arc;

use pilotage::correspondence;
use pilotage::execute::{ExecuteRequest, FinishCore, Recorder};
use pilotage::language::{Engine, ExecutionMode};
use pilotage::trace::{Trace, TraceLevelWire, TraceStep};
use pilotage::validate::{derive, Derivation, Locator, ValidateRequest, ValidateResponse};

use super::*;

fn caller() -> Caller {
    Caller::new("test-caller")
}

fn context() -> Json {
    json!({"timezone": "Europe/Paris"})
}

fn validate(engine: &Automation, program: &Json) -> ValidateResponse {
    let snapshot = engine.catalog_snapshot(&caller());
    let request = ValidateRequest {
        program: Arc::new(program.clone()),
        context: Some(Arc::new(context())),
        catalog: Some(snapshot.clone()),
        caller: caller(),
    };
    let core = Engine::validate_program(engine, &request);
    derive(
        core,
        Vec::new(),
        &Derivation {
            codes: &engine.language_spec().sets.codes,
            plan: true,
            catalog_version: Some(snapshot.version().to_owned()),
        },
    )
}

fn execute(
    engine: &Automation,
    program: &Json,
    input: Option<Json>,
    mode: ExecutionMode,
    test_run: bool,
) -> (FinishCore, Vec<TraceStep>) {
    let verdict = validate(engine, program);
    assert!(verdict.valid, "program must be valid to run: {:#?}", verdict.diagnostics);
    let request = ExecuteRequest {
        run_id: "run_test".to_owned(),
        program: Arc::new(program.clone()),
        input: input.map(Arc::new),
        context: Some(Arc::new(context())),
        catalog: Some(engine.catalog_snapshot(&caller())),
        caller: caller(),
        mode,
        test_run,
        promoted: Default::default(),
    };
    let recorder = Recorder::new(10_000);
    let finish = futures::executor::block_on(Engine::execute_program(engine, &request, recorder.clone()));
    assert!(recorder.input_findings().is_empty(), "{:?}", recorder.input_findings());
    let steps = recorder.steps();
    if mode == ExecutionMode::Immediate || test_run {
        let trace = Trace {
            run_id: "run_test".into(),
            level: TraceLevelWire::Full,
            steps: steps.clone(),
            stats: None,
        };
        let plan = verdict.plan.expect("a valid program has a plan");
        correspondence::check(&plan, &trace, finish.outcome.ok())
            .unwrap_or_else(|p| panic!("trace does not correspond to the plan: {p:?}\n{trace:#?}"));
    }
    (finish, steps)
}

fn guides() -> Vec<(&'static str, &'static str)> {
    Automation::new().language_spec().guides.iter().map(|g| (g.id, g.body)).collect()
}

fn json_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim()) {
            (None, "```json") => current = Some(String::new()),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some(buf), _) => {
                buf.push_str(line);
                buf.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

#[test]
fn every_guide_example_validates_and_runs() {
    let mut runs = 0;
    for (id, text) in guides() {
        for block in json_blocks(text) {
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
    let sets = spec.guides.iter().find(|g| g.id == "closed-sets").unwrap().body;
    for code in &spec.sets.codes {
        assert!(sets.contains(&format!("| `{code}` |")), "closed-sets guide lacks code {code}");
    }
    for s in &spec.sets.statuses {
        assert!(
            sets.contains(&format!("| `{}` | {} |", s.name, s.ok)),
            "closed-sets guide lacks status {}",
            s.name
        );
    }
    for k in &spec.sets.kinds {
        assert!(
            sets.contains(&format!("| `{}` | {}", k.name, if k.callable { "yes" } else { "no" })),
            "kind {}",
            k.name
        );
    }
    for r in &spec.sets.risks {
        let hints = serde_json::to_string(&r.hints).unwrap().replace(',', ", ").replace(':', ": ");
        assert!(sets.contains(&format!("| `{}` | `{hints}` |", r.name)), "risk {} {hints}", r.name);
    }
}

fn codes(v: &ValidateResponse) -> Vec<(String, String)> {
    v.diagnostics
        .iter()
        .map(|d| {
            let path = match &d.path {
                Locator::Pointer(p) => p.clone(),
                other => format!("{other:?}"),
            };
            (d.code.clone(), path)
        })
        .collect()
}

fn has(v: &ValidateResponse, code: &str, path: &str) -> bool {
    codes(v).iter().any(|(c, p)| c == code && p == path)
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
