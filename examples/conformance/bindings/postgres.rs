//! `sql/postgres` (examples/postgres): SQL text over a shared PostgreSQL database, bound to the
//! fixture schema of the tests (`tests/it/postgres_loop.rs`): customers 1 gold, 2 silver,
//! 3 bronze; orders 1-4 (`quantity > 0`, foreign key to customers); the view `order_totals`
//! (not updatable); `price_list` (SELECT only); `audit_log` (no grant: invisible); the function
//! `tier_rank(text)`. The caller acts as the fixture's writer role.

use serde_json::json;

use super::sql::{code, shared_cases, status, INSERT, NO_STEP_NAMES, STRAIGHT};
use crate::runner::binding::{Binding, Invisible, Observe, Program, Tier, ToolHook};

pub fn binding() -> Binding {
    let mut cases = shared_cases();
    cases.extend([
        code("forbidden_statement", "COPY customers TO STDOUT", "SELECT name FROM customers"),
        code(
            "bad_placeholder",
            "SELECT name FROM customers WHERE id = $1",
            "SELECT name FROM customers WHERE id = 1",
        ),
        code(
            "unknown_function",
            "SELECT tier_rnk(tier) FROM customers",
            "SELECT tier_rank(tier) FROM customers",
        ),
        code(
            "type_mismatch",
            "SELECT name FROM customers WHERE id = 'one'",
            "SELECT name FROM customers WHERE id = 1",
        ),
        code(
            "permission_denied",
            "DELETE FROM price_list WHERE item = 'pen'",
            "SELECT price FROM price_list WHERE item = 'pen'",
        ),
        code("already_exists", "CREATE TABLE customers (id int)", "CREATE TABLE customers_copy (id int)"),
        code(
            "constraint",
            "SELECT name, count(*) FROM customers",
            "SELECT tier, count(*) FROM customers GROUP BY tier",
        ),
        code(
            "every_row",
            "UPDATE orders SET quantity = quantity",
            "UPDATE orders SET quantity = quantity WHERE id = 1",
        ),
        // The statement timeout (5 s) cancels it on the server.
        status(
            "timeout",
            json!({"program": "SELECT pg_sleep(30)", "trace_level": "full"}),
            json!({"program": "SELECT pg_sleep(0)", "trace_level": "full"}),
        ),
        // Validation cannot know: FOR UPDATE needs the UPDATE privilege at execution only.
        status(
            "permission_denied",
            json!({"program": "SELECT price FROM price_list FOR UPDATE", "trace_level": "full"}),
            json!({"program": "SELECT price FROM price_list", "trace_level": "full"}),
        ),
    ]);
    Binding {
        language: "sql/postgres",
        argument: "query",
        tier: Tier::Adapted,
        context: None,
        mode: "immediate",
        valid: Program {
            program: json!(format!("{INSERT} (1, 'conformance pen', 1, 2.5);\nSELECT count(*) FROM orders")),
            input: Some(json!({})),
        },
        different_input: Err(
            "only the idempotency vectors use it, and sql/postgres declares no execute.idempotency",
        ),
        invalid: json!(format!("{INSERT} (1, 'must never be stored', 1, 1.0);\nSELECT name FROM custmers")),
        unknown_name: Ok(json!("SELECT name FROM custmers")),
        warnings_only: Ok(json!("UPDATE orders SET quantity = quantity")),
        reserved_char: Err(NO_STEP_NAMES),
        // Text has no JSON depth: exceed the runtime's program-size bound (1 MiB) instead.
        pathological: json!(format!("SELECT 1 -- {}", "x".repeat((1 << 20) + 16))),
        unclassifiable: Ok(json!("SELECT name, count(*) FROM customers")),
        branching: Err(STRAIGHT),
        zero_loop: Err(STRAIGHT),
        mid_run_failing: Ok(json!(format!(
            "SELECT count(*) FROM customers;\n{INSERT} (999, 'no such customer', 1, 1.0);\nSELECT 1"
        ))),
        cleanly_failing: Ok(json!(format!("{INSERT} (1, 'zero pens', 0, 1.0)"))),
        promotion: Err("sql/postgres has no promoted programs: no entry kind is marked promoted"),
        invisible: Ok(Invisible { id: "audit_log", near_miss: json!("SELECT * FROM audit_lo") }),
        observe: Observe::Tool(ToolHook::new("pg_world_fingerprint", json!({}))),
        // A comment is part of the entry's description; the time makes every change a change.
        perturb_catalog: Ok(ToolHook::new(
            "pg_schema_apply",
            json!({"ddl": "DO $$ BEGIN EXECUTE format('COMMENT ON TABLE orders IS %L', 'changed ' || clock_timestamp()); END $$"}),
        )),
        fault: Err("sql/postgres has no fault-injection switch"),
        cases,
    }
}
