//! `workflow/v1` (examples/workflow): JSON workflow documents over a seeded support desk
//! (users "42" gold, "7" silver with no open ticket, "13" bronze; tickets T-1001..T-1004, of
//! which T-1003 is closed).

use serde_json::{json, Value};

use super::nested;
use crate::runner::binding::{
    Binding, Branching, Case, CaseOp, Fault, Invisible, Observe, Program, ReservedChar, Surface, Tier,
    ToolHook, ZeroLoop,
};

fn call(id: &str, capability: &str, with: Value) -> Value {
    json!({"id": id, "kind": "call", "capability": capability, "with": with})
}

fn set(id: &str, value: Value) -> Value {
    json!({"id": id, "kind": "set", "value": value})
}

fn steps(steps: Vec<Value>) -> Value {
    json!({ "steps": steps })
}

fn profile(user: &str) -> Value {
    call("profile", "cap_read_user_profile", json!({"user_id": user}))
}

/// An execute case for a step-level status.
fn status(member: &'static str, bad: Value, good: Value) -> Case {
    Case::new(
        Surface::Status,
        member,
        CaseOp::Execute,
        json!({"program": bad, "trace_level": "full"}),
        json!({"program": good, "trace_level": "full"}),
    )
}

fn branch(arms: Value) -> Value {
    json!({"id": "b", "kind": "branch", "on": "$.steps.profile.output.tier", "arms": arms})
}

pub fn binding() -> Binding {
    let valid = json!({
        "steps": [
            profile("42"),
            call("ticket", "cap_create_ticket", json!({"user_id": "$.steps.profile.output.user_id", "title": "Conformance check"}))
        ],
        "output": {"name": "$.steps.profile.output.name", "ticket": "$.steps.ticket.output.id"}
    });
    let cases = vec![
        Case::code(
            "malformed_program",
            json!({"inputs": [], "steps": []}),
            json!({"inputs": {}, "steps": []}),
        ),
        Case::code("unknown_member", json!({"steps": [], "note": "x"}), json!({"steps": []})),
        Case::code(
            "malformed_step",
            json!({"steps": [{"kind": "set", "value": 1}]}),
            steps(vec![set("s", json!(1))]),
        ),
        Case::code(
            "unknown_step_kind",
            json!({"steps": [{"id": "s", "kind": "sett", "value": 1}]}),
            steps(vec![set("s", json!(1))]),
        ),
        Case::code(
            "duplicate_step_id",
            steps(vec![set("s", json!(1)), set("s", json!(2))]),
            steps(vec![set("s", json!(1)), set("t", json!(2))]),
        ),
        Case::code(
            "invalid_input_type",
            json!({"inputs": {"n": "int"}, "steps": [set("s", json!("$.input.n"))]}),
            json!({"inputs": {"n": "number"}, "steps": [set("s", json!("$.input.n"))]}),
        ),
        Case::code(
            "unknown_capability",
            steps(vec![call("u", "cap_list_user", json!({}))]),
            steps(vec![call("u", "cap_list_users", json!({}))]),
        ),
        Case::code(
            "not_callable",
            steps(vec![call("u", "ds_tiers", json!({}))]),
            steps(vec![call("u", "cap_list_users", json!({}))]),
        ),
        Case::code(
            "missing_argument",
            steps(vec![call("profile", "cap_read_user_profile", json!({}))]),
            steps(vec![profile("42")]),
        ),
        Case::code(
            "unexpected_argument",
            steps(vec![call("profile", "cap_read_user_profile", json!({"user_id": "42", "userid": "42"}))]),
            steps(vec![profile("42")]),
        ),
        Case::code(
            "type_mismatch",
            steps(vec![call("profile", "cap_read_user_profile", json!({"user_id": 42}))]),
            steps(vec![profile("42")]),
        ),
        Case::code(
            "unknown_reference",
            steps(vec![set("s", json!("$.nowhere"))]),
            steps(vec![set("s", json!("$$.nowhere"))]),
        ),
        Case::code(
            "out_of_scope",
            steps(vec![set("a", json!("$.steps.b.output")), set("b", json!(1))]),
            steps(vec![set("b", json!(1)), set("a", json!("$.steps.b.output"))]),
        ),
        Case::code(
            "unknown_field",
            steps(vec![profile("42"), set("s", json!("$.steps.profile.output.nmae"))]),
            steps(vec![profile("42"), set("s", json!("$.steps.profile.output.name"))]),
        ),
        Case::code(
            "duplicate_arm_label",
            steps(vec![
                profile("42"),
                branch(json!([{"label": "x", "equals": "gold", "steps": []}, {"label": "x", "steps": []}])),
            ]),
            steps(vec![
                profile("42"),
                branch(json!([{"label": "x", "equals": "gold", "steps": []}, {"label": "y", "steps": []}])),
            ]),
        ),
        Case::code(
            "missing_default_arm",
            steps(vec![profile("42"), branch(json!([{"label": "gold", "equals": "gold", "steps": []}]))]),
            steps(vec![
                profile("42"),
                branch(
                    json!([{"label": "gold", "equals": "gold", "steps": []}, {"label": "other", "steps": []}]),
                ),
            ]),
        ),
        Case::code(
            "unreachable_arm",
            steps(vec![
                profile("42"),
                branch(
                    json!([{"label": "other", "steps": []}, {"label": "gold", "equals": "gold", "steps": []}]),
                ),
            ]),
            steps(vec![
                profile("42"),
                branch(
                    json!([{"label": "gold", "equals": "gold", "steps": []}, {"label": "other", "steps": []}]),
                ),
            ]),
        ),
        Case::code(
            "unused_input",
            json!({"inputs": {"userId": "string"}, "steps": [profile("42")]}),
            json!({"inputs": {"userId": "string"}, "steps": [call("profile", "cap_read_user_profile", json!({"user_id": "$.input.userId"}))]}),
        ),
        Case::code("constraint", steps(vec![set("a#1", json!(1))]), steps(vec![set("a1", json!(1))])),
        Case::new(
            Surface::Code,
            "context_binding",
            CaseOp::Validate,
            json!({"program": steps(vec![set("s", json!(1))]), "context": {"tenant": "t1"}}),
            json!({"program": steps(vec![set("s", json!(1))])}),
        ),
        Case::new(
            Surface::Code,
            "input_binding",
            CaseOp::Execute,
            json!({"program": {"inputs": {"userId": "string"}, "steps": [call("profile", "cap_read_user_profile", json!({"user_id": "$.input.userId"}))]}, "input": {"userId": 42}}),
            json!({"program": {"inputs": {"userId": "string"}, "steps": [call("profile", "cap_read_user_profile", json!({"user_id": "$.input.userId"}))]}, "input": {"userId": "42"}}),
        ),
        status("not_found", steps(vec![profile("99")]), steps(vec![profile("42")])),
        status(
            "conflict",
            steps(vec![call("close", "cap_close_ticket", json!({"ticket_id": "T-1003"}))]),
            steps(vec![call("close", "cap_close_ticket", json!({"ticket_id": "T-1001"}))]),
        ),
        status(
            "rejected",
            steps(vec![call("mail", "cap_send_email", json!({"to": "nobody", "subject": "Hello"}))]),
            steps(vec![call(
                "mail",
                "cap_send_email",
                json!({"to": "nobody@example.com", "subject": "Hello"}),
            )]),
        ),
        status(
            "unresolved",
            steps(vec![
                call("users", "cap_list_users", json!({})),
                set("s", json!("$.steps.users.output.users.5.name")),
            ]),
            steps(vec![
                call("users", "cap_list_users", json!({})),
                set("s", json!("$.steps.users.output.users.0.name")),
            ]),
        ),
    ];
    Binding {
        language: "workflow/v1",
        argument: "workflow",
        tier: Tier::Native,
        context: None,
        mode: "immediate",
        valid: Program { program: valid, input: Some(json!({})) },
        different_input: Err("only the idempotency vectors use it, and workflow/v1 declares no execute.idempotency"),
        invalid: steps(vec![
            call("ticket", "cap_create_ticket", json!({"user_id": "42", "title": "Must never be created"})),
            call("profile", "cap_read_user_profil", json!({"user_id": "42"})),
        ]),
        unknown_name: Ok(steps(vec![call("profile", "cap_read_user_profil", json!({"user_id": "42"}))])),
        warnings_only: Ok(json!({
            "inputs": {"unused": "string"},
            "steps": [call("users", "cap_list_users", json!({"extra": 1}))]
        })),
        reserved_char: Ok(ReservedChar { program: steps(vec![set("a#1", json!(1))]), id: "a#1" }),
        pathological: steps(vec![set("deep", nested(100, json!(1)))]),
        unclassifiable: Err(
            "native tier: the validator classifies every finding itself and uses `constraint` only for reserved \
             characters in step identifiers (see PIL-VALIDATE-RESERVED-CHARS-B); no finding is unclassifiable",
        ),
        branching: Ok(Branching {
            program: steps(vec![
                profile("42"),
                json!({"id": "check", "kind": "branch", "on": "$.steps.profile.output.tier", "arms": [
                    {"label": "gold", "equals": "gold", "steps": [set("vip", json!("gold customer"))]},
                    {"label": "other", "steps": [set("regular", json!("other customer"))]}
                ]}),
            ]),
            branch: "check",
            took: "gold",
        }),
        zero_loop: Ok(ZeroLoop {
            program: steps(vec![
                call("tickets", "cap_list_open_tickets", json!({"user_id": "7"})),
                json!({"id": "each", "kind": "loop", "over": "$.steps.tickets.output.tickets", "as": "t", "steps": [
                    call("close", "cap_close_ticket", json!({"ticket_id": "$.vars.t.id"}))
                ]}),
            ]),
            loop_id: "each",
            body: vec!["close"],
        }),
        mid_run_failing: Ok(steps(vec![
            call("first", "cap_close_ticket", json!({"ticket_id": "T-1004"})),
            call("again", "cap_close_ticket", json!({"ticket_id": "T-1004"})),
            set("never", json!(1)),
        ])),
        cleanly_failing: Ok(steps(vec![profile("99")])),
        promotion: Err("workflow/v1 has no promoted programs: no entry kind is marked promoted, so the server exposes no promote tool"),
        invisible: Ok(Invisible {
            id: "cap_admin_purge",
            near_miss: steps(vec![call("purge", "cap_admin_purg", json!({}))]),
        }),
        observe: Observe::Tool(ToolHook::new("world_fingerprint", json!({}))),
        perturb_catalog: Ok(ToolHook::new(
            "catalog_update_entry",
            json!({"id": "cap_list_users", "description": "Changed by the conformance runner."}),
        )),
        fault: Ok(Fault {
            on: ToolHook::new("inject_fault", json!({"validator_panic": true})),
            off: ToolHook::new("inject_fault", json!({"validator_panic": false})),
        }),
        cases,
    }
}
