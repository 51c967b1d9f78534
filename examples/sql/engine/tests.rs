//! Engine-level tests, through the public testkit (`pilotage::testkit::Kit`: the engine behind a
//! real server, every call over the protocol, every run's trace checked against its plan):
//! every ```sql block of the guides validates (and the runnable ones run), the closed sets are
//! enumerated by the closed-sets guide, codes fire at exact ranges, plans and traces share
//! their identifiers, failures roll back.

use pilotage::engine::Engine;
use pilotage::model::errors::ErrorKind;
use pilotage::model::plan::ValidateResponse;
use pilotage::testkit::{fenced_blocks, findings, guide, guides, typed_args, Kit, Ran};

#[path = "../../common/closed_sets_table.rs"]
mod closed_sets_table;

use pilotage::prelude::*;

use std::sync::Arc;

use pilotage::engine::CatalogSnapshot;

use crate::engine::kept::{Checked, Checks, KEPT, KEPT_BYTES};
use crate::engine::*;

fn kit() -> Kit<Sql> {
    Kit::new(Sql::demo())
}

fn v(kit: &mut Kit<Sql>, sql: &str) -> ValidateResponse {
    kit.validate(&json!(sql))
}

fn execute(kit: &mut Kit<Sql>, sql: &str, input: Option<Json>) -> Ran {
    let mut args = kit.args(&json!(sql));
    if let Some(input) = input {
        args["input"] = input;
    }
    kit.execute_args(args).unwrap_or_else(|e| panic!("the run was refused: {e}"))
}

/// `(code, "l1:c1-l2:c2")` of every diagnostic.
fn found(v: &ValidateResponse) -> Vec<(String, String)> {
    findings(&v.diagnostics)
}

fn only(v: &ValidateResponse) -> (String, String, Option<String>) {
    assert_eq!(v.diagnostics.len(), 1, "{:#?}", v.diagnostics);
    let (code, at) = found(v).remove(0);
    (code, at, v.diagnostics[0].hint.clone())
}

fn fp(kit: &Kit<Sql>) -> Json {
    kit.engine().fingerprint(typed_args(json!({}))).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Guides

#[test]
fn every_guide_sql_block_validates_and_runs() {
    let mut n = 0;
    for (id, body) in guides(&Sql::demo()) {
        for block in fenced_blocks(body, "sql") {
            let mut kit = kit();
            let verdict = v(&mut kit, &block);
            assert!(verdict.valid, "{id}: {:#?}\n{block}", verdict.diagnostics);
            let input = if block.contains(':') {
                let arguments = fenced_blocks(body, "json")
                    .into_iter()
                    .map(|b| serde_json::from_str::<Json>(&b).unwrap())
                    .find(|d| d["query"].as_str().map(str::trim) == Some(block.trim()))
                    .unwrap_or_else(|| {
                        panic!("{id}: a block with placeholders needs its run_sql arguments:\n{block}")
                    });
                Some(arguments["input"].clone())
            } else {
                None
            };
            let ran = execute(&mut kit, &block, input);
            assert_eq!(ran.status(), "success", "{id}: {:?}\n{block}", ran.response);
            n += 1;
        }
        for block in fenced_blocks(body, "json") {
            let doc: Json =
                serde_json::from_str(&block).unwrap_or_else(|e| panic!("{id}: bad JSON ({e}):\n{block}"));
            let sql = doc["query"]
                .as_str()
                .unwrap_or_else(|| panic!("{id}: a json block is run_sql arguments:\n{block}"));
            let mut kit = kit();
            let ran = execute(&mut kit, sql, doc.get("input").cloned());
            assert_eq!(ran.status(), "success", "{id}: {:?}\n{block}", ran.response);
            n += 1;
        }
    }
    assert!(n >= 4, "the guides should carry runnable examples ({n})");
}

#[test]
fn core_example_plan_trace_and_output() {
    let doc: Json = serde_json::from_str(&fenced_blocks(guide(&Sql::demo(), "sql-core"), "json")[0]).unwrap();
    let sql = doc["query"].as_str().unwrap();
    let mut kit = kit();
    let plan = v(&mut kit, sql).plan.unwrap();
    let ids: Vec<(&str, Option<&str>, &str)> =
        plan.steps.iter().map(|s| (s.id.as_str(), s.calls.as_deref(), s.risk.as_str())).collect();
    assert_eq!(
        ids,
        [
            ("stmt-1", None, "write"),
            ("stmt-1.ref-1", Some("customers"), "write"),
            ("stmt-2", None, "safe"),
            ("stmt-2.ref-1", Some("order_totals"), "safe"),
            ("stmt-2.ref-2", Some("customers"), "safe"),
        ]
    );
    assert_eq!(plan.max_risk, "write");
    let ran = execute(&mut kit, sql, Some(doc["input"].clone()));
    let trace_ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ran.ids(), trace_ids);
    assert_eq!(ran.steps()[0].output, Some(json!({"changes": 1})));
    assert_eq!(
        ran.response.output,
        Some(
            json!({"columns": ["name", "orders", "total"], "rows": [["Amira Hassan", 2, 87.5], ["Mei Chen", 1, 13.5]]})
        )
    );
}

#[test]
fn closed_sets_guide_enumerates_every_member() {
    let text = guide(&Sql::demo(), "sql-closed-sets");
    closed_sets_table::assert_closed_sets_listed(Sql::demo().language_spec(), text);
    for f in db::FUNCTIONS {
        assert!(text.contains(&format!("`{f}`")), "closed-sets guide lacks function {f}");
    }
    let core = guide(&Sql::demo(), "sql-core");
    assert!(core.len() < 8192, "core guide is {} bytes", core.len());
}

// ---------------------------------------------------------------------------------------------
// Validation

#[test]
fn exact_ranges_for_syntax_and_names() {
    let mut kit = kit();
    assert_eq!(only(&v(&mut kit, "SELEC 1")), ("syntax_error".into(), "1:1-1:6".into(), None));
    let d = v(&mut kit, "SELECT name\n  FROM customers\n WHERE");
    assert_eq!(found(&d), [("syntax_error".to_owned(), "3:2-3:7".to_owned())]);
    assert_eq!(only(&v(&mut kit, "SELECT 'abc")).1, "1:8-1:9");
    let (code, at, hint) = only(&v(&mut kit, "SELECT name FROM custmers"));
    assert_eq!(
        (code.as_str(), at.as_str(), hint.as_deref()),
        ("unknown_table", "1:18-1:26", Some("close match: customers"))
    );
    let (code, at, hint) = only(&v(&mut kit, "SELECT nme FROM customers"));
    assert_eq!(
        (code.as_str(), at.as_str(), hint.as_deref()),
        ("unknown_column", "1:8-1:11", Some("close match: name"))
    );
    let (code, at, hint) =
        only(&v(&mut kit, "SELECT id FROM customers JOIN orders ON orders.customer_id = customers.id"));
    assert_eq!(
        (code.as_str(), at.as_str(), hint.as_deref()),
        ("ambiguous_column", "1:8-1:10", Some("qualify it: customers.id or orders.id"))
    );
    let (code, at, _) = only(&v(&mut kit, "SELECT 1 FROM customers WHERE name MATCH )"));
    assert_eq!((code.as_str(), at.as_str()), ("syntax_error", "1:1-1:43"));
}

#[test]
fn malformed_programs() {
    let mut kit = kit();
    assert_eq!(only(&kit.validate(&json!({"sql": 1}))).0, "malformed_program");
    assert_eq!(only(&kit.validate(&json!({"sql": 1}))).1, "1:1-1:1");
    assert_eq!(only(&v(&mut kit, "  -- nothing\n")).1, "1:1-2:1");
    assert_eq!(only(&v(&mut kit, ";;")).0, "malformed_program");
}

#[test]
fn forbidden_statements_and_functions() {
    let mut kit = kit();
    for (sql, at) in [
        ("ATTACH DATABASE 'x.db' AS x", "1:1-1:7"),
        ("PRAGMA table_info(customers)", "1:1-1:7"),
        ("VACUUM INTO '/tmp/copy.db'", "1:1-1:7"),
        ("CREATE TABLE t (a)", "1:1-1:7"),
        ("BEGIN", "1:1-1:6"),
        ("DROP VIEW order_totals", "1:1-1:5"),
        ("SELECT load_extension('evil')", "1:8-1:22"),
    ] {
        assert_eq!(found(&v(&mut kit, sql)), [("forbidden_statement".to_owned(), at.to_owned())], "{sql}");
    }
    let d = v(&mut kit, "SELECT 1;\n  pragma foreign_keys = off");
    assert_eq!(found(&d), [("forbidden_statement".to_owned(), "2:3-2:9".to_owned())]);
    let (_, _, hint) = only(&v(&mut kit, "SELECT cout(*) FROM orders"));
    assert_eq!(hint.as_deref(), Some("close match: count; the closed-sets guide lists every function"));
}

#[test]
fn invisible_tables_are_unknown_and_never_hinted() {
    let mut kit = kit();
    for sql in ["SELECT * FROM sqlite_master", "SELECT * FROM sqlite_schema", "SELECT * FROM sqlite_mastr"] {
        let d = v(&mut kit, sql);
        assert_eq!(d.diagnostics[0].code, "unknown_table", "{sql}");
        let text = serde_json::to_string(&d).unwrap();
        assert!(!text.contains("close match: sqlite"), "{text}");
    }
    let hidden = kit.catalog(json!({"verb": "get", "id": "sqlite_schema"})).unwrap_err();
    assert_eq!(hidden.error.kind, ErrorKind::NotFound);
}

#[test]
fn writes_types_and_placeholders() {
    let mut kit = kit();
    let (code, at, _) = only(&v(&mut kit, "INSERT INTO order_totals (name) VALUES ('x')"));
    assert_eq!((code.as_str(), at.as_str()), ("not_writable", "1:13-1:25"));
    let (code, at, _) = only(&v(
        &mut kit,
        "INSERT INTO orders (customer_id, item, quantity, price) VALUES (1, 'pen', 'two', 1.5)",
    ));
    assert_eq!((code.as_str(), at.as_str()), ("type_mismatch", "1:75-1:80"));
    let (code, at, hint) = only(&v(&mut kit, "UPDATE customers SET tiers = 'gold' WHERE id = 1"));
    assert_eq!(
        (code.as_str(), at.as_str(), hint.as_deref()),
        ("unknown_column", "1:22-1:27", Some("close match: tier"))
    );
    let (code, at, _) = only(&v(&mut kit, "SELECT * FROM customers WHERE id = ?"));
    assert_eq!((code.as_str(), at.as_str()), ("bad_placeholder", "1:36-1:37"));
    let (code, at, _) = only(&v(&mut kit, "INSERT INTO customers (name, email) VALUES ('x')"));
    assert_eq!((code.as_str(), at.as_str()), ("constraint", "1:1-1:49"));
    assert!(v(&mut kit, "SELECT * FROM customers WHERE id = :id AND tier = :tier").valid);
}

#[test]
fn plan_steps_refs_and_risk() {
    let mut kit = kit();
    let d = v(
        &mut kit,
        "SELECT c.name, o.item FROM orders o JOIN customers c ON c.id = o.customer_id;\n\
         UPDATE customers SET tier = 'gold' WHERE id = 2;\n\
         DELETE FROM orders;\n\
         UPDATE orders SET quantity = 1",
    );
    assert!(d.valid, "{:#?}", d.diagnostics);
    let plan = d.plan.unwrap();
    let steps: Vec<(String, Option<String>, String)> =
        plan.steps.iter().map(|s| (s.id.clone(), s.calls.clone(), s.risk.clone())).collect();
    let s = |id: &str, calls: Option<&str>, risk: &str| {
        (id.to_owned(), calls.map(str::to_owned), risk.to_owned())
    };
    assert_eq!(
        steps,
        [
            s("stmt-1", None, "safe"),
            s("stmt-1.ref-1", Some("orders"), "safe"),
            s("stmt-1.ref-2", Some("customers"), "safe"),
            s("stmt-2", None, "write"),
            s("stmt-2.ref-1", Some("customers"), "write"),
            s("stmt-3", None, "destructive"),
            s("stmt-3.ref-1", Some("orders"), "destructive"),
            s("stmt-4", None, "destructive"),
            s("stmt-4.ref-1", Some("orders"), "destructive"),
        ]
    );
    assert_eq!(plan.max_risk, "destructive");
    assert_eq!(
        serde_json::to_value(plan.max_risk_hints).unwrap(),
        json!({"readOnly": false, "destructive": true, "openWorld": false})
    );
}

// ---------------------------------------------------------------------------------------------
// Execution

#[test]
fn trace_has_a_step_per_statement_and_reference() {
    let mut kit = kit();
    let ran = execute(
        &mut kit,
        "UPDATE customers SET tier = :tier WHERE id = :id;\nSELECT name, tier FROM customers WHERE id = :id",
        Some(json!({"id": 3, "tier": "silver"})),
    );
    assert_eq!(ran.status(), "success", "{:?}", ran.response);
    assert_eq!(ran.ids(), ["stmt-1", "stmt-1.ref-1", "stmt-2", "stmt-2.ref-1"]);
    assert_eq!(ran.steps()[0].output, Some(json!({"changes": 1})));
    assert_eq!(
        ran.steps()[0].input,
        Some(
            json!({"sql": "UPDATE customers SET tier = :tier WHERE id = :id", "params": {"tier": "silver", "id": 3}})
        )
    );
    assert_eq!(ran.steps()[1].calls.as_deref(), Some("customers"));
    assert_eq!(ran.steps()[1].input, Some(json!({"access": "update"})));
    let rows = json!({"columns": ["name", "tier"], "rows": [["Mei Chen", "silver"]]});
    assert_eq!(ran.steps()[2].output, Some(rows.clone()));
    assert_eq!(ran.response.output, Some(rows));
}

#[test]
fn a_failing_statement_rolls_everything_back() {
    let mut kit = kit();
    let before = fp(&kit);
    let ran = execute(
        &mut kit,
        "UPDATE customers SET tier = 'gold' WHERE id = 2;\nDELETE FROM customers WHERE id = 1",
        None,
    );
    assert_eq!(ran.status(), "partial");
    assert_eq!(ran.ids(), ["stmt-1", "stmt-1.ref-1", "stmt-2"]);
    assert_eq!(ran.steps()[2].outcome.status(), "constraint_violated");
    assert_eq!(ran.steps()[2].outcome.error(), Some("FOREIGN KEY constraint failed"));
    assert_eq!(
        ran.response.outcome.error(),
        Some("stmt-2 failed: FOREIGN KEY constraint failed; the transaction was rolled back: no change persists")
    );
    assert_eq!(fp(&kit), before);
    let ran = execute(
        &mut kit,
        "INSERT INTO orders (customer_id, item, quantity, price) VALUES (1, 'pen', 0, 1.0)",
        None,
    );
    assert_eq!(ran.status(), "error");
    assert_eq!(fp(&kit), before);
}

#[test]
fn input_binding() {
    let mut kit = kit();
    let sql = "SELECT name FROM customers WHERE id = :id AND tier = :tier";
    let ran = execute(&mut kit, sql, Some(json!({"id": [1], "extra": true})));
    assert!(ran.steps().is_empty());
    assert_eq!(ran.input_binding(), ["/id", "/tier", "/extra"]);
    let ran = execute(&mut kit, sql, Some(json!({"id": 1, "tier": "gold"})));
    assert_eq!(ran.response.output, Some(json!({"columns": ["name"], "rows": [["Amira Hassan"]]})));
    // An input that is not an object fails the tool's advertised inputSchema: -32602.
    let mut args = kit.args(&json!("SELECT 1"));
    args["input"] = json!("x");
    let error = kit.request("tools/call", json!({"name": "run_sql", "arguments": args})).unwrap_err();
    assert_eq!(error["code"], -32602, "{error}");
}

#[test]
fn drop_and_admin_tools_move_the_catalog_rows_do_not() {
    let mut kit = kit();
    let v1 = kit.engine().version();
    execute(&mut kit, "INSERT INTO customers (name, email) VALUES ('New', 'new@example.com')", None);
    assert_eq!(kit.engine().version(), v1, "rows never move catalog_version");
    kit.engine()
        .schema_apply(typed_args(json!({"ddl": "ALTER TABLE customers ADD COLUMN phone TEXT"})))
        .unwrap();
    let v2 = kit.engine().version();
    assert_ne!(v1, v2);
    assert!(v(&mut kit, "SELECT phone FROM customers").valid);
    kit.engine()
        .create_table(typed_args(
            json!({"name": "notes", "columns": {"id": "INTEGER PRIMARY KEY", "body": "TEXT NOT NULL"}}),
        ))
        .unwrap();
    assert!(kit.catalog(json!({"verb": "get", "id": "notes"})).is_ok());
    let ran = execute(&mut kit, "DROP TABLE notes", None);
    assert_eq!(ran.status(), "success");
    assert_eq!(kit.engine().version(), v2);
    assert!(kit
        .engine()
        .schema_apply(typed_args(
            json!({"ddl": "CREATE TRIGGER t AFTER INSERT ON orders BEGIN DELETE FROM orders; END"})
        ))
        .is_err());
    assert!(kit.engine().schema_apply(typed_args(json!({"ddl": "DELETE FROM orders"}))).is_err());
    kit.engine().drop_table(typed_args(json!({"name": "order_totals"}))).unwrap();
    assert_eq!(v(&mut kit, "SELECT * FROM order_totals").diagnostics[0].code, "unknown_table");
}

#[test]
fn validation_is_side_effect_free() {
    let mut kit = kit();
    let before = fp(&kit);
    assert!(v(&mut kit, "DELETE FROM orders; DROP TABLE orders").valid);
    assert_eq!(fp(&kit), before);
    assert_eq!(
        found(&v(&mut kit, "DROP TABLE orders; SELECT * FROM orders")),
        [("unknown_table".to_owned(), "1:34-1:40".to_owned())]
    );
}

// ---------------------------------------------------------------------------------------------
// The checks kept for runs (`kept.rs`)

#[test]
fn a_run_uses_its_validations_check_only_while_the_schema_stands() {
    let mut kit = kit();
    let select = "SELECT item FROM orders WHERE id = 1";
    assert!(v(&mut kit, select).valid);
    let ran = execute(&mut kit, select, None);
    assert_eq!(ran.response.output, Some(json!({"columns": ["item"], "rows": [["keyboard"]]})));
    // The validation's check is kept (every caller sees the one cached snapshot, the
    // validation's).
    let snapshot = kit.engine().catalog_snapshot(&Caller::new("any"));
    let kept = |kit: &Kit<Sql>| {
        let db = kit.engine().db();
        let schema = db.schema_version().unwrap();
        db.checks.get(&json!(select), Some(&snapshot), schema).is_some()
    };
    assert!(kept(&kit));
    // Once the table is dropped, the kept check is no longer the database's: the same program
    // is checked again, and refused.
    assert_eq!(execute(&mut kit, "DROP TABLE orders", None).status(), "success");
    assert!(!kept(&kit));
    assert_eq!(execute(&mut kit, select, None).status(), "validation_error");
}

#[test]
fn a_kept_check_is_found_only_for_the_same_program_catalog_and_schema() {
    let checks = Checks::default();
    let (program, checked): (Json, Checked) = (json!("SELECT 1"), Arc::new(Vec::new()));
    let snapshot = CatalogSnapshot::new(Vec::new());
    checks.keep(&program, Some(&snapshot), 7, checked.clone());
    let found = checks.get(&program, Some(&snapshot), 7).expect("the same program, catalog and schema");
    assert!(Arc::ptr_eq(&found, &checked));
    assert!(checks.get(&program, Some(&snapshot), 8).is_none(), "the schema moved");
    assert!(checks.get(&program, None, 7).is_none(), "another catalog");
    assert!(checks.get(&json!("SELECT 2"), Some(&snapshot), 7).is_none(), "another program");
    assert!(checks.get(&json!(["SELECT 1"]), Some(&snapshot), 7).is_none(), "not SQL text");
}

#[test]
fn the_kept_checks_are_bounded_in_count_and_program_length() {
    let checks = Checks::default();
    let long = json!("x".repeat(KEPT_BYTES + 1));
    checks.keep(&long, None, 1, Arc::new(Vec::new()));
    assert!(checks.get(&long, None, 1).is_none(), "a program over {KEPT_BYTES} bytes is not kept");
    for n in 0..=KEPT {
        checks.keep(&json!(format!("SELECT {n}")), None, 1, Arc::new(Vec::new()));
    }
    assert!(checks.get(&json!("SELECT 0"), None, 1).is_none(), "the oldest went first");
    assert!(checks.get(&json!("SELECT 1"), None, 1).is_some());
    assert!(checks.get(&json!(format!("SELECT {KEPT}")), None, 1).is_some());
    for n in 1..=KEPT {
        assert!(checks.get(&json!(format!("SELECT {n}")), None, 1).is_some(), "SELECT {n}");
    }
}
