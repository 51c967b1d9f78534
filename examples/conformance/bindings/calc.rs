//! `calc/v1` (examples/calc): `{"op": "add", "args": [numbers]}`, one step `sum`, no catalog,
//! no state, retention "none".

use serde_json::json;

use super::nested;
use crate::runner::binding::{Binding, Case, CaseOp, Observe, Program, Surface, Tier};

const NO_STEP_IDS: &str =
    "calc programs have no author-chosen step identifiers (the only step is always `sum`)";
const ONE_STEP: &str =
    "a calc program is one `sum` step that cannot fail: there is no branch, loop, failing step or second step";

pub fn binding() -> Binding {
    Binding {
        language: "calc/v1",
        argument: "calc",
        tier: Tier::Native,
        context: None,
        mode: "immediate",
        valid: Program { program: json!({"op": "add", "args": [1, 2, 3]}), input: None },
        different_input: Err("calc programs take no input"),
        invalid: json!({"op": "mul", "args": [1, 2]}),
        unknown_name: Err("calc/v1 has no catalog"),
        warnings_only: Err("calc/v1 has no warning-severity diagnostic"),
        reserved_char: Err(NO_STEP_IDS),
        pathological: json!({"op": "add", "args": nested(100, json!(1))}),
        unclassifiable: Err("native tier: the validator's only finding is `unknown_op`"),
        branching: Err(ONE_STEP),
        zero_loop: Err(ONE_STEP),
        mid_run_failing: Err(ONE_STEP),
        cleanly_failing: Err(ONE_STEP),
        promotion: Err("calc/v1 has no catalog and no promoted programs"),
        invisible: Err("calc/v1 has no catalog"),
        observe: Observe::Stateless(
            "calc/v1 keeps no state: its only risk level is read-only and a run only adds numbers",
        ),
        perturb_catalog: Err("calc/v1 has no catalog"),
        fault: Err(
            "calc/v1 has no fault-injection switch, and neither its validator nor its engine can fail",
        ),
        cases: vec![
            Case::code(
                "unknown_op",
                json!({"op": "mul", "args": [1, 2]}),
                json!({"op": "add", "args": [1, 2]}),
            ),
            Case::new(
                Surface::Code,
                "context_binding",
                CaseOp::Validate,
                json!({"program": {"op": "add", "args": [1]}, "context": {"k": 1}}),
                json!({"program": {"op": "add", "args": [1]}}),
            ),
            Case::new(
                Surface::Code,
                "input_binding",
                CaseOp::Execute,
                json!({"program": {"op": "add", "args": [1]}, "input": {"x": 1}}),
                json!({"program": {"op": "add", "args": [1]}}),
            ),
        ],
    }
}
