//! `automation/v1` (examples/automation): programs and rules over a seeded smart building
//! (lights hall_light, kitchen_light, office_light; office_thermostat; front_door, locked;
//! sensors; an outbox and a counter). Every request carries `context`; every execute request
//! carries `mode`.

use serde_json::{json, Value};

use super::nested;
use crate::runner::binding::{
    Binding, Branching, Case, CaseOp, Observe, Program, Promotion, ReservedChar, Surface, Tier, ToolHook,
    ZeroLoop,
};

fn call(id: &str, action: &str, with: Value) -> Value {
    json!({"id": id, "call": action, "with": with})
}

fn set(id: &str, value: Value) -> Value {
    json!({"id": id, "set": value})
}

fn steps(steps: Vec<Value>) -> Value {
    json!({ "steps": steps })
}

fn light_on(id: &str, device: &str) -> Value {
    call(id, "light_set", json!({"device": device, "on": true}))
}

fn status(member: &'static str, bad: Value, good: Value) -> Case {
    Case::new(
        Surface::Status,
        member,
        CaseOp::Execute,
        json!({"program": bad, "trace_level": "full"}),
        json!({"program": good, "trace_level": "full"}),
    )
}

fn fault(args: Value) -> ToolHook {
    ToolHook::new("inject_fault", args)
}

/// Lights of a room on: the program promoted by the promotion vectors and cases.
fn routine() -> Value {
    json!({
        "inputs": {"room": "string"},
        "steps": [
            call("lights", "devices_list", json!({"room": "$.input.room", "kind": "light"})),
            {"id": "each", "loop": "$.steps.lights.output.devices", "as": "light", "steps": [
                call("on", "light_set", json!({"device": "$.vars.light.device", "on": true}))
            ]}
        ],
        "output": {"room": "$.input.room"}
    })
}

pub fn binding() -> Binding {
    let branch = |arms: Value| json!({"id": "b", "branch": "$.steps.level.output", "arms": arms});
    let level = set("level", json!(50));
    let cases = vec![
        Case::code("malformed_program", json!({"steps": [], "extra": 1}), steps(vec![])),
        Case::code("malformed_step", steps(vec![json!({"set": 1})]), steps(vec![set("s", json!(1))])),
        Case::code(
            "malformed_arms",
            steps(vec![level.clone(), branch(json!([{"label": "high", "above": 40, "steps": []}]))]),
            steps(vec![
                level.clone(),
                branch(json!([{"label": "high", "above": 40, "steps": []}, {"label": "low", "steps": []}])),
            ]),
        ),
        Case::code(
            "duplicate_step_id",
            steps(vec![set("s", json!(1)), set("s", json!(2))]),
            steps(vec![set("s", json!(1)), set("t", json!(2))]),
        ),
        Case::code(
            "invalid_input_type",
            json!({"inputs": {"n": "int"}, "steps": [set("s", json!("$.input.n"))]}),
            json!({"inputs": {"n": "integer"}, "steps": [set("s", json!("$.input.n"))]}),
        ),
        Case::code(
            "unknown_action",
            steps(vec![call("on", "light_sett", json!({"device": "hall_light", "on": true}))]),
            steps(vec![light_on("on", "hall_light")]),
        ),
        Case::code(
            "unknown_routine",
            steps(vec![json!({"id": "r", "run": "prog_0000000000000000", "with": {}})]),
            steps(vec![light_on("on", "hall_light")]),
        ),
        Case::code(
            "unknown_event",
            json!({"trigger": {"event": "motoin"}, "steps": []}),
            json!({"trigger": {"event": "motion"}, "steps": []}),
        ),
        Case::code(
            "not_callable",
            steps(vec![call("m", "motion", json!({}))]),
            steps(vec![call("m", "devices_list", json!({}))]),
        ),
        Case::code(
            "missing_argument",
            steps(vec![call("on", "light_set", json!({"device": "hall_light"}))]),
            steps(vec![light_on("on", "hall_light")]),
        ),
        Case::code(
            "unexpected_argument",
            steps(vec![call(
                "on",
                "light_set",
                json!({"device": "hall_light", "on": true, "colour": "red"}),
            )]),
            steps(vec![light_on("on", "hall_light")]),
        ),
        Case::code(
            "type_mismatch",
            steps(vec![call("on", "light_set", json!({"device": "hall_light", "on": true, "level": 150}))]),
            steps(vec![call("on", "light_set", json!({"device": "hall_light", "on": true, "level": 50}))]),
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
            "unused_input",
            json!({"inputs": {"room": "string"}, "steps": [call("l", "devices_list", json!({}))]}),
            json!({"inputs": {"room": "string"}, "steps": [call("l", "devices_list", json!({"room": "$.input.room"}))]}),
        ),
        Case::code("constraint", steps(vec![set("a#1", json!(1))]), steps(vec![set("a1", json!(1))])),
        Case::new(
            Surface::Code,
            "context_binding",
            CaseOp::Validate,
            json!({"program": steps(vec![set("s", json!(1))]), "context": {"timezone": 5}}),
            json!({"program": steps(vec![set("s", json!(1))])}),
        ),
        Case::new(
            Surface::Code,
            "input_binding",
            CaseOp::Execute,
            json!({"program": {"inputs": {"n": "integer"}, "steps": [set("s", json!("$.input.n"))]}, "input": {"n": 1.5}}),
            json!({"program": {"inputs": {"n": "integer"}, "steps": [set("s", json!("$.input.n"))]}, "input": {"n": 2}}),
        ),
        status(
            "not_found",
            steps(vec![call("d", "device_get", json!({"device": "garage_light"}))]),
            steps(vec![call("d", "device_get", json!({"device": "hall_light"}))]),
        ),
        status(
            "denied",
            steps(vec![call("u", "door_unlock", json!({"device": "front_door"}))]),
            steps(vec![call("u", "door_unlock", json!({"device": "front_door"}))]),
        )
        .after_good(fault(json!({"lockdown": true}))),
        status(
            "timeout",
            steps(vec![light_on("on", "hall_light")]),
            steps(vec![light_on("on", "hall_light")]),
        )
        .after_good(fault(json!({"offline": ["hall_light"]}))),
        status(
            "rejected",
            steps(vec![light_on("on", "office_thermostat")]),
            steps(vec![light_on("on", "office_light")]),
        ),
        status(
            "mode_mismatch",
            json!({"trigger": {"event": "motion"}, "steps": [light_on("on", "hall_light")]}),
            steps(vec![light_on("on", "hall_light")]),
        ),
        status(
            "stale",
            steps(vec![json!({"id": "again", "run": "<promoted-ref>", "with": {"room": "hall"}})]),
            steps(vec![json!({"id": "again", "run": "<promoted-ref>", "with": {"room": "hall"}})]),
        )
        .promoted()
        .after_good(ToolHook::new("catalog_update_entry", json!({"id": "light_set", "risk": "destructive"}))),
    ];
    Binding {
        language: "automation/v1",
        argument: "automation",
        tier: Tier::Native,
        context: Some(json!({"timezone": "Europe/Paris"})),
        mode: "immediate",
        valid: Program {
            program: json!({
                "steps": [light_on("on", "hall_light"), call("count", "counter_add", json!({"by": 1}))],
                "output": {"level": "$.steps.on.output.level", "counter": "$.steps.count.output.counter"}
            }),
            input: Some(json!({})),
        },
        different_input: Ok(json!({"room": "hall"})),
        invalid: steps(vec![light_on("on", "hall_light"), call("x", "light_sett", json!({"device": "hall_light", "on": true}))]),
        unknown_name: Ok(steps(vec![call("x", "light_sett", json!({"device": "hall_light", "on": true}))])),
        warnings_only: Ok(json!({"inputs": {"unused": "string"}, "steps": [call("l", "devices_list", json!({}))]})),
        reserved_char: Ok(ReservedChar { program: steps(vec![set("a#1", json!(1))]), id: "a#1" }),
        pathological: steps(vec![set("deep", nested(100, json!(1)))]),
        unclassifiable: Err(
            "native tier: the validator classifies every finding itself and uses `constraint` only for reserved \
             characters in step identifiers (see PIL-VALIDATE-RESERVED-CHARS-B)",
        ),
        branching: Ok(Branching {
            program: steps(vec![
                level,
                json!({"id": "check", "branch": "$.steps.level.output", "arms": [
                    {"label": "high", "above": 40, "steps": [set("bright", json!(true))]},
                    {"label": "low", "steps": [set("dim", json!(true))]}
                ]}),
            ]),
            branch: "check",
            took: "high",
        }),
        zero_loop: Ok(ZeroLoop {
            program: steps(vec![
                call("lights", "devices_list", json!({"room": "garage", "kind": "light"})),
                json!({"id": "each", "loop": "$.steps.lights.output.devices", "as": "light", "steps": [
                    call("on", "light_set", json!({"device": "$.vars.light.device", "on": true}))
                ]}),
            ]),
            loop_id: "each",
            body: vec!["on"],
        }),
        mid_run_failing: Ok(steps(vec![
            call("count", "counter_add", json!({"by": 1})),
            light_on("on", "office_thermostat"),
            set("never", json!(1)),
        ])),
        cleanly_failing: Ok(steps(vec![
            call("door", "device_get", json!({"device": "front_door"})),
            set("missing", json!("$.steps.door.output.state.colour")),
        ])),
        promotion: Ok(Promotion {
            tool: "promote_automation",
            args: json!({
                "name": "Room lights on",
                "input_schema": {
                    "type": "object",
                    "properties": {"room": {"type": "string"}},
                    "required": ["room"],
                    "additionalProperties": false
                }
            }),
            program: routine(),
            input: json!({"room": "hall"}),
            bad_input: json!({"room": 5}),
            drift: ToolHook::new("catalog_update_entry", json!({"id": "light_set", "risk": "destructive"})),
        }),
        invisible: Err("every automation/v1 entry is visible to every caller of the session"),
        observe: Observe::Tool(ToolHook::new("world_fingerprint", json!({}))),
        perturb_catalog: Ok(ToolHook::new(
            "catalog_update_entry",
            json!({"id": "devices_list", "description": "Changed by the conformance runner."}),
        )),
        fault: Err(
            "inject_fault makes devices fail (timeout, denied outcomes); nothing makes the server's own machinery fail",
        ),
        cases,
    }
}
