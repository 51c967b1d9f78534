//! Engine-level tests, through the public testkit (`pilotage::testkit::Kit`: the engine behind a
//! real server, every call over the protocol, every run's trace checked against its plan):
//! every guide example validates (and the runnable ones succeed), the closed codes fire where
//! documented, the plan and the trace follow Part II §5.6-§5.8.

use pilotage::engine::Engine;
use pilotage::model::diagnostic::Severity;
use pilotage::model::errors::ErrorKind;
use pilotage::testkit::{fenced_blocks, findings, guide, guides, has, typed_args, Kit, Ran};

#[path = "../../common/closed_sets_table.rs"]
mod closed_sets_table;

use pilotage::prelude::*;

use crate::engine::*;

fn kit() -> Kit<Workflow> {
    Kit::new(Workflow::new())
}

fn execute(kit: &mut Kit<Workflow>, program: &Json, input: Option<Json>) -> Ran {
    let mut args = kit.args(program);
    if let Some(input) = input {
        args["input"] = input;
    }
    kit.execute_args(args).unwrap_or_else(|e| panic!("the run was refused: {e}"))
}

/// The catalog_version the catalog tool serves.
fn version(kit: &mut Kit<Workflow>) -> String {
    let list = kit.catalog(json!({"verb": "list"})).expect("the catalog lists");
    list["catalog_version"].as_str().expect("a catalog_version").to_owned()
}

fn call(id: &str, cap: &str, with: Json) -> Json {
    json!({"id": id, "kind": "call", "capability": cap, "with": with})
}

// ---------------------------------------------------------------------------------------------
// Guides

#[test]
fn every_guide_example_validates_and_runs() {
    let mut programs = 0;
    for (file, text) in guides(&Workflow::new()) {
        for block in fenced_blocks(text, "json") {
            let doc: Json = serde_json::from_str(&block)
                .unwrap_or_else(|e| panic!("{file}: bad JSON block ({e}):\n{block}"));
            let mut kit = kit();
            if let Some(program) = doc.get("workflow") {
                let ran = execute(&mut kit, program, doc.get("input").cloned());
                assert_eq!(ran.status(), "success", "{file}: {:?} {:?}", ran.response, ran.steps());
            } else {
                assert!(
                    doc.get("steps").is_some(),
                    "{file}: a json block is neither a program nor run arguments:\n{block}"
                );
                let v = kit.validate(&doc);
                assert!(v.valid, "{file}: {:#?}", v.diagnostics);
            }
            programs += 1;
        }
    }
    assert!(programs >= 4, "the guides should carry runnable examples");
}

#[test]
fn closed_sets_guide_enumerates_every_member() {
    closed_sets_table::assert_closed_sets_listed(
        Workflow::new().language_spec(),
        guide(&Workflow::new(), "closed-sets"),
    );
    let core = guide(&Workflow::new(), "core");
    assert!(core.len() < 8192, "core guide is {} bytes", core.len());
}

// ---------------------------------------------------------------------------------------------
// Validation

#[test]
fn unknown_capability_hints_only_visible_entries() {
    let mut kit = kit();
    let v = kit.validate(&json!({"steps": [call("p", "cap_read_user_profil", json!({"user_id": "42"}))]}));
    assert!(!v.valid);
    let d = &v.diagnostics[0];
    assert_eq!(d.code, "unknown_capability");
    assert_eq!(d.path, "/steps/0/capability".into());
    assert_eq!(d.hint.as_deref(), Some("close match: cap_read_user_profile"));

    // The hidden entry exists in the world but is unknown to callers and never suggested.
    for name in ["cap_admin_purge", "cap_admin_purg", "cap_admin_purgee"] {
        let v = kit.validate(&json!({"steps": [call("p", name, json!({}))]}));
        assert!(has(&v.diagnostics, "unknown_capability", "/steps/0/capability"), "{name}");
        let text = serde_json::to_string(&v).unwrap();
        assert!(!text.contains("cap_admin_purge\"") && !text.contains("close match: cap_admin"), "{text}");
    }
    let hidden = kit.catalog(json!({"verb": "get", "id": "cap_admin_purge"})).unwrap_err();
    assert_eq!(hidden.error.kind, ErrorKind::NotFound);
}

#[test]
fn structural_codes() {
    let mut kit = kit();
    let v = kit.validate(&json!({
        "input": {},
        "steps": [
            {"id": "a", "kind": "cal", "capability": "cap_list_users"},
            {"kind": "set", "value": 1},
            {"id": "a", "kind": "set", "value": 1, "over": "x"},
            {"id": "b#1", "kind": "set", "value": 1},
            {"id": "c", "kind": "call", "capability": "ds_tiers"},
            {"id": "d", "kind": "branch", "on": "gold", "arms": []}
        ]
    }));
    assert!(has(&v.diagnostics, "unknown_member", "/input"), "{:?}", findings(&v.diagnostics));
    assert!(has(&v.diagnostics, "unknown_step_kind", "/steps/0/kind"));
    assert!(has(&v.diagnostics, "malformed_step", "/steps/1"));
    assert!(has(&v.diagnostics, "duplicate_step_id", "/steps/2/id"));
    assert!(has(&v.diagnostics, "unknown_member", "/steps/2/over"));
    assert!(has(&v.diagnostics, "constraint", "/steps/3/id"));
    assert!(has(&v.diagnostics, "not_callable", "/steps/4/capability"));
    assert!(has(&v.diagnostics, "malformed_step", "/steps/5/on"));
    assert!(has(&v.diagnostics, "malformed_step", "/steps/5/arms"));
    assert!(v.plan.is_none());
    let v = kit.validate(&json!([1]));
    assert!(has(&v.diagnostics, "malformed_program", ""));
    let v = kit.validate(&json!({"inputs": {"n": "int"}, "steps": []}));
    assert!(has(&v.diagnostics, "invalid_input_type", "/inputs/n"));
}

#[test]
fn arguments_and_types() {
    let mut kit = kit();
    let v = kit.validate(&json!({"steps": [
        call("a", "cap_create_ticket", json!({"user_id": 42, "titel": "x"})),
        {"id": "b", "kind": "call", "capability": "cap_close_ticket"},
    ]}));
    assert!(has(&v.diagnostics, "missing_argument", "/steps/0/with"), "{:?}", findings(&v.diagnostics));
    assert!(has(&v.diagnostics, "unexpected_argument", "/steps/0/with/titel"));
    assert!(has(&v.diagnostics, "type_mismatch", "/steps/0/with/user_id"));
    assert!(has(&v.diagnostics, "missing_argument", "/steps/1"));
    let hint = v.diagnostics.iter().find(|d| d.code == "unexpected_argument").and_then(|d| d.hint.clone());
    assert_eq!(hint.as_deref(), Some("close match: title"));
}

#[test]
fn references_and_scope() {
    let mut kit = kit();
    let v = kit.validate(
        &json!({
            "inputs": {"userId": "string"},
            "steps": [
                call("early", "cap_read_user_profile", json!({"user_id": "$.steps.profile.output.user_id"})),
                call("profile", "cap_read_user_profile", json!({"user_id": "$.input.userid"})),
                {"id": "check", "kind": "branch", "on": "$.steps.profile.output.tier", "arms": [
                    {"label": "gold", "equals": "gold", "steps": [{"id": "inner", "kind": "set", "value": 1}]},
                    {"label": "other", "steps": [{"id": "peek", "kind": "set", "value": "$.steps.inner.output"}]}
                ]},
                {"id": "after", "kind": "set", "value": ["$.steps.inner.output", "$.vars.t", "$.steps.check.output", "$.step.x", "$.steps.profile.output.tierr"]},
                {"id": "each", "kind": "loop", "over": "$.steps.profile.output.name", "as": "t", "steps": []}
            ]
        }),
    );
    let c = findings(&v.diagnostics);
    assert!(has(&v.diagnostics, "out_of_scope", "/steps/0/with/user_id"), "{c:?}");
    assert!(has(&v.diagnostics, "unknown_reference", "/steps/1/with/user_id"), "{c:?}");
    assert!(has(&v.diagnostics, "out_of_scope", "/steps/2/arms/1/steps/0/value"), "{c:?}");
    assert!(has(&v.diagnostics, "out_of_scope", "/steps/3/value/0"), "{c:?}");
    assert!(has(&v.diagnostics, "out_of_scope", "/steps/3/value/1"), "{c:?}");
    assert!(has(&v.diagnostics, "unknown_reference", "/steps/3/value/2"), "{c:?}");
    assert!(has(&v.diagnostics, "unknown_reference", "/steps/3/value/3"), "{c:?}");
    assert!(has(&v.diagnostics, "unknown_field", "/steps/3/value/4"), "{c:?}");
    assert!(has(&v.diagnostics, "type_mismatch", "/steps/4/over"), "{c:?}");
    assert!(has(&v.diagnostics, "unused_input", "/inputs/userId"), "{c:?}");
    let hint =
        v.diagnostics.iter().find(|d| d.path == "/steps/1/with/user_id".into()).and_then(|d| d.hint.clone());
    assert_eq!(hint.as_deref(), Some("close match: userId"));
}

#[test]
fn arms() {
    let mut kit = kit();
    let v = kit.validate(&json!({"steps": [
        call("p", "cap_read_user_profile", json!({"user_id": "42"})),
        {"id": "b", "kind": "branch", "on": "$.steps.p.output.tier", "arms": [
            {"label": "x", "equals": "gold", "steps": []},
            {"label": "x", "equals": "gold", "steps": []}
        ]},
        {"id": "c", "kind": "branch", "on": "$.steps.p.output.tier", "arms": [
            {"label": "any", "steps": []},
            {"label": "gold", "equals": "gold", "steps": []}
        ]}
    ]}));
    assert!(
        has(&v.diagnostics, "duplicate_arm_label", "/steps/1/arms/1/label"),
        "{:?}",
        findings(&v.diagnostics)
    );
    assert!(has(&v.diagnostics, "unreachable_arm", "/steps/1/arms/1/equals"));
    assert!(has(&v.diagnostics, "missing_default_arm", "/steps/1/arms"));
    assert!(has(&v.diagnostics, "unreachable_arm", "/steps/2/arms/1"));
}

#[test]
fn warnings_only_program_is_valid_with_a_plan() {
    let mut kit = kit();
    let v = kit.validate(
        &json!({"inputs": {"unused": "string"}, "steps": [call("u", "cap_list_users", json!({"extra": 1}))]}),
    );
    assert!(v.valid);
    assert!(!v.diagnostics.is_empty());
    assert!(v.diagnostics.iter().all(|d| d.severity == Severity::Warning));
    let plan = v.plan.expect("valid programs have a plan");
    assert_eq!(plan.max_risk, "safe");
}

#[test]
fn plan_annotations() {
    let mut kit = kit();
    let program = json!({"steps": [
        {"id": "users", "kind": "call", "capability": "cap_list_users"},
        {"id": "outer", "kind": "branch", "on": "$.steps.users.output.users.0.tier", "arms": [
            {"label": "gold", "equals": "gold", "steps": [
                {"id": "each", "kind": "loop", "over": "$.steps.users.output.users", "as": "u", "steps": [
                    {"id": "tier", "kind": "branch", "on": "$.vars.u.tier", "arms": [
                        {"label": "bronze", "equals": "bronze", "steps": [
                            call("drop", "cap_delete_user", json!({"user_id": "$.vars.u.user_id"}))
                        ]},
                        {"label": "rest", "steps": []}
                    ]},
                    call("mail", "cap_send_email", json!({"to": "x@example.com", "subject": "$.vars.u.name"}))
                ]}
            ]},
            {"label": "other", "steps": []}
        ]}
    ]});
    let v = kit.validate(&program);
    assert!(v.valid, "{:?}", findings(&v.diagnostics));
    let plan = v.plan.unwrap();
    let steps: Vec<Json> = plan.steps.iter().map(|s| serde_json::to_value(s).unwrap()).collect();
    assert_eq!(
        steps,
        vec![
            json!({"id": "users", "calls": "cap_list_users", "risk": "safe", "risk_hints": {"readOnly": true, "destructive": false, "openWorld": false}}),
            json!({"id": "outer", "risk": "safe", "risk_hints": {"readOnly": true, "destructive": false, "openWorld": false}}),
            json!({"id": "each", "arm": {"branch": "outer", "label": "gold"}, "risk": "safe", "risk_hints": {"readOnly": true, "destructive": false, "openWorld": false}}),
            json!({"id": "tier", "loop": "each", "risk": "safe", "risk_hints": {"readOnly": true, "destructive": false, "openWorld": false}}),
            json!({"id": "drop", "calls": "cap_delete_user", "arm": {"branch": "tier", "label": "bronze"}, "loop": "each", "risk": "destructive", "risk_hints": {"readOnly": false, "destructive": true, "openWorld": false}}),
            json!({"id": "mail", "calls": "cap_send_email", "loop": "each", "risk": "external", "risk_hints": {"readOnly": false, "destructive": false, "openWorld": true}}),
        ]
    );
    assert_eq!(plan.max_risk, "external");
    assert_eq!(
        serde_json::to_value(plan.max_risk_hints).unwrap(),
        json!({"readOnly": false, "destructive": true, "openWorld": true})
    );
}

// ---------------------------------------------------------------------------------------------
// Execution

fn core_example() -> (Json, Json) {
    let block = fenced_blocks(guide(&Workflow::new(), "core"), "json").remove(0);
    let doc: Json = serde_json::from_str(&block).unwrap();
    (doc["workflow"].clone(), doc["input"].clone())
}

#[test]
fn trace_identity_branch_and_loop_decisions() {
    let mut kit = kit();
    let (program, input) = core_example();
    let ran = execute(&mut kit, &program, Some(input));
    assert_eq!(ran.status(), "success");
    assert_eq!(ran.ids(), ["profile", "tickets", "check", "close_all", "close#1", "close#2", "summary"]);
    let check = ran.step("check").decisions.clone().unwrap();
    assert_eq!(check.len(), 1);
    assert_eq!(check[0].took, "gold");
    assert_eq!(check[0].because, "$.steps.profile.output.tier == \"gold\"");
    let took: Vec<&str> =
        ran.step("close_all").decisions.as_ref().unwrap().iter().map(|d| d.took.as_str()).collect();
    assert_eq!(took, ["continue", "continue", "exit"]);
    assert_eq!(ran.step("close#2").input, Some(json!({"ticket_id": "T-1002"})));
    assert_eq!(ran.step("close#2").calls.as_deref(), Some("cap_close_ticket"));
    assert_eq!(ran.step("summary").input, Some(Json::Null));
    assert_eq!(
        ran.response.output,
        Some(json!({"tier": "gold", "summary": {"user": "Amira Hassan", "open_before": 2}}))
    );
    assert_eq!(admin::fingerprint_of(&kit.engine().world())["tickets_open"], 1);

    // Silver user: default arm, the loop is never reached.
    let ran = execute(&mut Kit::new(Workflow::new()), &program, Some(json!({"userId": "7"})));
    assert_eq!(ran.ids(), ["profile", "tickets", "check", "summary"]);
    let d = &ran.step("check").decisions.as_ref().unwrap()[0];
    assert_eq!(d.took, "other");
}

#[test]
fn zero_iteration_loop_records_one_exit() {
    let mut kit = kit();
    let program = json!({"inputs": {"userId": "string"}, "steps": [
        call("tickets", "cap_list_open_tickets", json!({"user_id": "$.input.userId"})),
        {"id": "each", "kind": "loop", "over": "$.steps.tickets.output.tickets", "as": "t", "steps": [
            call("close", "cap_close_ticket", json!({"ticket_id": "$.vars.t.id"}))
        ]}
    ]});
    let ran = execute(&mut kit, &program, Some(json!({"userId": "7"})));
    assert_eq!(ran.status(), "success");
    assert_eq!(ran.ids(), ["tickets", "each"]);
    let d = ran.step("each").decisions.clone().unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].took, "exit");
    assert_eq!(d[0].at, "each");
    assert_eq!(ran.response.output, None);
}

#[test]
fn nested_loops_qualify_ids_outermost_first() {
    let mut kit = kit();
    let program = json!({"steps": [
        {"id": "rows", "kind": "set", "value": [[1, 2], [3]]},
        {"id": "outer", "kind": "loop", "over": "$.steps.rows.output", "as": "row", "steps": [
            {"id": "inner", "kind": "loop", "over": "$.vars.row", "as": "cell", "steps": [
                {"id": "v", "kind": "set", "value": {"cell": "$.vars.cell"}}
            ]}
        ]}
    ]});
    let ran = execute(&mut kit, &program, None);
    assert_eq!(ran.ids(), ["rows", "outer", "inner#1", "v#1#1", "v#1#2", "inner#2", "v#2#1"]);
    assert_eq!(ran.step("v#1#2").output, Some(json!({"cell": 2})));
}

#[test]
fn failures_are_error_first_then_partial() {
    let mut kit = kit();
    let first = json!({"inputs": {"userId": "string"}, "steps": [
        call("profile", "cap_read_user_profile", json!({"user_id": "$.input.userId"}))
    ]});
    let ran = execute(&mut kit, &first, Some(json!({"userId": "99"})));
    assert_eq!(ran.status(), "error");
    assert_eq!(ran.step("profile").outcome.status(), "not_found");

    let second = json!({"steps": [
        call("a", "cap_close_ticket", json!({"ticket_id": "T-1004"})),
        call("b", "cap_close_ticket", json!({"ticket_id": "T-1004"})),
        {"id": "c", "kind": "set", "value": 1}
    ]});
    let ran = execute(&mut kit, &second, None);
    assert_eq!(ran.status(), "partial");
    assert_eq!(ran.ids(), ["a", "b"]);
    assert_eq!(ran.step("b").outcome.status(), "conflict");
    assert!(ran.response.outcome.error().is_some());
    assert_eq!(ran.response.output, None);
}

#[test]
fn input_binding_refuses_before_any_step() {
    let mut kit = kit();
    let before = admin::fingerprint_of(&kit.engine().world());
    let program = json!({"inputs": {"userId": "string", "n": "number"}, "steps": [
        call("t", "cap_create_ticket", json!({"user_id": "$.input.userId", "title": "x"})),
        {"id": "s", "kind": "set", "value": "$.input.n"}
    ]});
    let ran = execute(&mut kit, &program, Some(json!({"userId": 42, "extra": true})));
    assert!(ran.steps().is_empty());
    assert_eq!(ran.input_binding(), ["/userId", "/n", "/extra"]);
    let ran = execute(&mut kit, &program, None);
    assert_eq!(ran.refused().len(), 1);
    assert_eq!(admin::fingerprint_of(&kit.engine().world()), before);
}

#[test]
fn admin_tools_move_the_catalog_and_echo() {
    let mut kit = kit();
    let v1 = version(&mut kit);
    assert_eq!(version(&mut kit), v1, "stable without changes");
    kit.engine().add_entry(typed_args(json!({"id": "cap_echo", "risk": "write"}))).unwrap();
    let v2 = version(&mut kit);
    assert_ne!(v1, v2);
    let ran = execute(&mut kit, &json!({"steps": [call("e", "cap_echo", json!({"a": [1, "$$x"]}))]}), None);
    assert_eq!(ran.step("e").output, Some(json!({"a": [1, "$x"]})));
    kit.engine().update_entry(typed_args(json!({"id": "cap_echo", "description": "changed"}))).unwrap();
    assert_ne!(version(&mut kit), v2);
    kit.engine().remove_entry(typed_args(json!({"id": "cap_echo"}))).unwrap();
    assert_eq!(version(&mut kit), v1);
    assert!(kit.engine().add_entry(typed_args(json!({"id": "cap_admin_purge"}))).is_err());
    assert!(kit.engine().remove_entry(typed_args(json!({"id": "cap_admin_purge"}))).is_err());
    let fp = kit.engine().fingerprint(typed_args(json!({}))).unwrap();
    assert_eq!(fp["tickets_open"], 3);
    assert_eq!(fp["emails_sent"], 0);
    assert_eq!(fp["fingerprint"].as_str().unwrap().len(), 32);
}

#[test]
fn validation_is_side_effect_free_and_fault_injection_panics() {
    let mut kit = kit();
    let (program, _) = core_example();
    let before = kit.engine().fingerprint(typed_args(json!({}))).unwrap();
    for _ in 0..3 {
        assert!(kit.validate(&program).valid);
    }
    assert_eq!(kit.engine().fingerprint(typed_args(json!({}))).unwrap(), before);
    kit.engine().inject_fault(typed_args(json!({"validator_panic": true}))).unwrap();
    let args = kit.args(&program);
    let refused = kit.validate_args(args).expect_err("a panicking validator judges nothing");
    assert_eq!(refused.error.kind, ErrorKind::Internal);
    kit.engine().inject_fault(typed_args(json!({"validator_panic": false}))).unwrap();
    assert!(kit.validate(&program).valid);
}

#[test]
fn loop_iterations_are_bounded() {
    let mut kit = kit();
    let items: Vec<u32> = (0..400).collect();
    let program = json!({"steps": [
        {"id": "rows", "kind": "set", "value": items},
        {"id": "outer", "kind": "loop", "over": "$.steps.rows.output", "as": "a", "steps": [
            {"id": "inner", "kind": "loop", "over": "$.steps.rows.output", "as": "b", "steps": []}
        ]}
    ]});
    let ran = execute(&mut kit, &program, None);
    assert_eq!(ran.status(), "partial");
    assert_eq!(ran.step("outer").outcome.status(), "partial");
    let inner = ran.steps().iter().filter(|s| s.id.starts_with("inner#")).count();
    assert!(inner < 400, "{inner}");
}
