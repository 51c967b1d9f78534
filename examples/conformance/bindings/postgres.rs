//! `sql/postgres` (examples/postgres): SQL text over a shared PostgreSQL database, bound to the
//! fixture schema of the tests (`tests/it/postgres_loop.rs`): customers 1 gold, 2 silver,
//! 3 bronze; orders 1-4 (`quantity > 0`, foreign key to customers); the view `order_totals`
//! (not updatable); `price_list` (SELECT only); `audit_log` (no grant: invisible); the function
//! `tier_rank(text)`. The caller acts as the fixture's writer role.

use serde_json::json;

use super::sql::{code, over_demo_tables, shared_cases, status};
use crate::runner::binding::{Binding, Invisible, Observe, ToolHook};

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
        // Validation cannot know: setval needs the sequence's UPDATE privilege (the writer
        // holds USAGE only), which PostgreSQL checks when it runs.
        status(
            "permission_denied",
            json!({"program": "SELECT setval('orders_id_seq', 1)", "trace_level": "full"}),
            json!({"program": "SELECT price FROM price_list", "trace_level": "full"}),
        ),
    ]);
    Binding {
        language: "sql/postgres",
        warnings_only: Ok(json!("UPDATE orders SET quantity = quantity")),
        unclassifiable: Ok(json!("SELECT name, count(*) FROM customers")),
        invisible: Ok(Invisible { id: "audit_log", near_miss: json!("SELECT * FROM audit_lo") }),
        observe: Observe::Tool(ToolHook::new("pg_world_fingerprint", json!({}))),
        // A comment is part of the entry's description; the time makes every change a change.
        perturb_catalog: Ok(ToolHook::new(
            "pg_schema_apply",
            json!({"ddl": "DO $$ BEGIN EXECUTE format('COMMENT ON TABLE orders IS %L', 'changed ' || clock_timestamp()); END $$"}),
        )),
        ..over_demo_tables(cases)
    }
}
