//! `sql/sqlite-3` (examples/sql): SQL text over a private copy of the demo database
//! (customers 1 gold, 2 silver, 3 bronze; orders 1-4; view `order_totals`; STRICT tables,
//! foreign keys enforced, `quantity > 0`).

use serde_json::{json, Value};

use crate::runner::binding::{Binding, Case, CaseOp, Invisible, Observe, Program, Surface, Tier, ToolHook};

/// The demo's order insert, up to its values (also `sql/postgres`'s fixture).
pub const INSERT: &str = "INSERT INTO orders (customer_id, item, quantity, price) VALUES";
pub const NO_STEP_NAMES: &str =
    "step identifiers are generated from the text (`stmt-N`, `stmt-N.ref-K`), never chosen by the author";
pub const STRAIGHT: &str =
    "SQL programs are straight-line: statements run in sequence, with no branch or loop steps";

pub fn code(member: &'static str, bad: &str, good: &str) -> Case {
    Case::code(member, json!(bad), json!(good))
}

/// The cases both SQL Languages share: over the same demo tables, the same programs.
pub fn shared_cases() -> Vec<Case> {
    vec![
        Case::code("malformed_program", json!({"select": 1}), json!("SELECT 1")),
        code("syntax_error", "SELEC name FROM customers", "SELECT name FROM customers"),
        code("unknown_table", "SELECT name FROM custmers", "SELECT name FROM customers"),
        code("unknown_column", "SELECT nmae FROM customers", "SELECT name FROM customers"),
        code(
            "ambiguous_column",
            "SELECT id FROM customers JOIN orders ON orders.customer_id = customers.id",
            "SELECT customers.id FROM customers JOIN orders ON orders.customer_id = customers.id",
        ),
        code(
            "not_writable",
            "DELETE FROM order_totals WHERE customer_id = 1",
            "DELETE FROM orders WHERE customer_id = 1",
        ),
        Case::new(
            Surface::Code,
            "context_binding",
            CaseOp::Validate,
            json!({"program": "SELECT 1", "context": {"tenant": "t1"}}),
            json!({"program": "SELECT 1"}),
        ),
        Case::new(
            Surface::Code,
            "input_binding",
            CaseOp::Execute,
            json!({"program": "SELECT name FROM customers WHERE id = :id", "input": {"id": [1]}}),
            json!({"program": "SELECT name FROM customers WHERE id = :id", "input": {"id": 1}}),
        ),
        status(
            "constraint_violated",
            json!({"program": format!("{INSERT} (1, 'pen', 0, 1.5)"), "trace_level": "full"}),
            json!({"program": format!("{INSERT} (1, 'pen', 1, 1.5)"), "trace_level": "full"}),
        ),
    ]
}

pub fn status(member: &'static str, bad: Value, good: Value) -> Case {
    Case::new(Surface::Status, member, CaseOp::Execute, bad, good)
}

pub fn binding() -> Binding {
    let mut cases = shared_cases();
    cases.extend([
        code("forbidden_statement", "PRAGMA table_info(customers)", "SELECT name FROM customers"),
        code(
            "bad_placeholder",
            "SELECT name FROM customers WHERE id = ?",
            "SELECT name FROM customers WHERE id = 1",
        ),
        code(
            "type_mismatch",
            &format!("{INSERT} ('one', 'pen', 1, 1.5)"),
            &format!("{INSERT} (1, 'pen', 1, 1.5)"),
        ),
        code(
            "constraint",
            "INSERT INTO customers (name, email, tier) VALUES ('Ada')",
            "INSERT INTO customers (name, email, tier) VALUES ('Ada', 'ada@example.com', 'gold')",
        ),
        status(
            "timeout",
            json!({"program": "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n", "trace_level": "full"}),
            json!({"program": "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT 10) SELECT count(*) FROM n", "trace_level": "full"}),
        ),
    ]);
    Binding {
        language: "sql/sqlite-3",
        warnings_only: Err("sql/sqlite-3 reports only error-severity diagnostics"),
        unclassifiable: Ok(json!("INSERT INTO customers (name, email, tier) VALUES ('Ada')")),
        invisible: Ok(Invisible { id: "sqlite_schema", near_miss: json!("SELECT name FROM sqlite_schem") }),
        observe: Observe::Tool(ToolHook::new("sql_world_fingerprint", json!({}))),
        perturb_catalog: Ok(ToolHook::new(
            "sql_schema_apply",
            json!({"ddl": "ALTER TABLE orders ADD COLUMN note TEXT"}),
        )),
        ..over_demo_tables(cases)
    }
}

/// What a binding of an SQL Language over the demo tables shares with every other (the
/// Language's own fields are placeholders the caller replaces): straight-line text programs,
/// no idempotency, promotion or fault switch.
pub fn over_demo_tables(cases: Vec<Case>) -> Binding {
    Binding {
        language: "",
        argument: "query",
        tier: Tier::Adapted,
        context: None,
        mode: "immediate",
        valid: Program {
            program: json!(format!("{INSERT} (1, 'conformance pen', 1, 2.5);\nSELECT count(*) FROM orders")),
            input: Some(json!({})),
        },
        different_input: Err(
            "only the idempotency vectors use it, and no SQL Language declares execute.idempotency",
        ),
        invalid: json!(format!("{INSERT} (1, 'must never be stored', 1, 1.0);\nSELECT name FROM custmers")),
        unknown_name: Ok(json!("SELECT name FROM custmers")),
        warnings_only: Err("no warning-only program"),
        reserved_char: Err(NO_STEP_NAMES),
        // Text has no JSON depth: exceed the runtime's program-size bound (1 MiB) instead.
        pathological: json!(format!("SELECT 1 -- {}", "x".repeat((1 << 20) + 16))),
        unclassifiable: Err("no unclassifiable program"),
        branching: Err(STRAIGHT),
        zero_loop: Err(STRAIGHT),
        mid_run_failing: Ok(json!(format!(
            "SELECT count(*) FROM customers;\n{INSERT} (999, 'no such customer', 1, 1.0);\nSELECT 1"
        ))),
        cleanly_failing: Ok(json!(format!("{INSERT} (1, 'zero pens', 0, 1.0)"))),
        promotion: Err("the SQL Languages have no promoted programs: no entry kind is marked promoted"),
        invisible: Err("no invisible entry"),
        observe: Observe::Stateless("no observation tool"),
        perturb_catalog: Err("no catalog change"),
        fault: Err("the SQL Languages have no fault-injection switch"),
        cases,
    }
}
