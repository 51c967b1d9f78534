//! The `sql/sqlite-3` Language through real endpoints: Streamable HTTP in-process, and the
//! `sql` example binary over stdio. Exact values throughout: text ranges, plans, traces,
//! outcomes, catalog versions, fingerprints.

use crate::{sql, support};

use serde_json::{json, Value};
use support::{Conn, HttpServer, HttpStyle};

fn hints(read_only: bool, destructive: bool) -> Value {
    json!({"readOnly": read_only, "destructive": destructive, "openWorld": false})
}

fn risk(level: &str) -> Value {
    match level {
        "safe" => hints(true, false),
        "write" => hints(false, false),
        _ => hints(false, true),
    }
}

/// A plan step as the wire carries it.
fn step(id: &str, calls: Option<&str>, level: &str) -> Value {
    let mut s = json!({"id": id});
    if let Some(c) = calls {
        s["calls"] = json!(c);
    }
    s["risk"] = json!(level);
    s["risk_hints"] = risk(level);
    s
}

fn range(l1: u32, c1: u32, l2: u32, c2: u32) -> Value {
    json!({"start": {"line": l1, "column": c1}, "end": {"line": l2, "column": c2}})
}

fn server() -> pilotage::Server {
    pilotage::Server::builder().name("sql-test", "0").language(sql::Sql::demo).build().unwrap()
}

async fn session(http: &HttpServer) -> Conn {
    let mut conn = http.connect(HttpStyle::Plain);
    conn.initialize(true).await;
    conn
}

async fn validate(conn: &mut Conn, query: &str) -> Value {
    conn.call_ok("validate_sql", json!({"query": query})).await
}

async fn fingerprint(conn: &mut Conn) -> Value {
    conn.call_ok("sql_world_fingerprint", json!({})).await
}

fn error_kind(call: &support::ToolCall) -> &str {
    assert!(call.is_error, "expected a request error: {}", call.raw);
    call.structured["error"]["kind"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn manifest_entry_and_tool_surface() {
    let http = HttpServer::start(&server()).await;
    let mut conn = session(&http).await;
    let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
    assert_eq!(
        manifest,
        json!({
            "pilotage": "1.1",
            "languages": [{
                "name": "sql/sqlite-3",
                "title": "SQL over SQLite 3",
                "guides": "pilotage_get_guide",
                "catalog": "pilotage_catalog",
                "loop": {"validate": "validate_sql", "execute": "run_sql", "trace": "trace_sql"},
                "capabilities": {
                    "guides": true,
                    "catalog": {"search": true},
                    "validate": true,
                    "plan": true,
                    "execute": true,
                    "trace_fetch": true
                },
                "locator": "text-range",
                "execution": "immediate",
                "trace": "full",
                "retention": "session"
            }]
        })
    );
    let tools = conn.tools_list().await;
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "pilotage_catalog",
            "pilotage_get_guide",
            "pilotage_manifest",
            "run_sql",
            "sql_create_table",
            "sql_drop_table",
            "sql_schema_apply",
            "sql_world_fingerprint",
            "trace_sql",
            "validate_sql"
        ]
    );
    let run = tools.iter().find(|t| t["name"] == "run_sql").unwrap();
    assert_eq!(run["_meta"][support::EXT], json!({"argument": "query", "language": "sql/sqlite-3"}));
    assert_eq!(run["annotations"]["destructiveHint"], json!(true), "tables are destructive entries");
    let index = conn.call_ok("pilotage_get_guide", json!({"language": "sql/sqlite-3"})).await;
    let ids: Vec<&str> =
        index["guides"].as_array().unwrap().iter().map(|g| g["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["sql-closed-sets", "sql-core", "sql-examples"]);
    let core =
        conn.call_ok("pilotage_get_guide", json!({"language": "sql/sqlite-3", "id": "sql-core"})).await;
    assert!(core["guide"]["size_bytes"].as_u64().unwrap() < 8192);
}

#[tokio::test]
async fn validate_valid_and_invalid_with_exact_ranges() {
    let http = HttpServer::start(&server()).await;
    let mut conn = session(&http).await;
    let cv = conn.call_ok("pilotage_catalog", json!({"language": "sql/sqlite-3", "verb": "list"})).await
        ["catalog_version"]
        .clone();

    let ok = validate(&mut conn, "SELECT name, tier FROM customers WHERE tier = 'gold'").await;
    assert_eq!(
        ok,
        json!({
            "valid": true,
            "diagnostics": [],
            "catalog_version": cv,
            "plan": {
                "steps": [step("stmt-1", None, "safe"), step("stmt-1.ref-1", Some("customers"), "safe")],
                "max_risk": "safe",
                "max_risk_hints": hints(true, false)
            }
        })
    );

    let bad = validate(&mut conn, "SELECT name FROM custmers").await;
    assert_eq!(
        bad,
        json!({
            "valid": false,
            "diagnostics": [{
                "severity": "error",
                "code": "unknown_table",
                "path": range(1, 18, 1, 26),
                "message": "no table or view `custmers` in the catalog",
                "hint": "close match: customers"
            }],
            "catalog_version": cv
        })
    );

    let syntax = validate(&mut conn, "SELECT name\n  FROM customers\n WHERE").await;
    assert_eq!(syntax["valid"], json!(false));
    assert_eq!(
        syntax["diagnostics"],
        json!([{
            "severity": "error",
            "code": "syntax_error",
            "path": range(3, 2, 3, 7),
            "message": "Expected: an expression, found: the end of the statement"
        }])
    );

    let column = validate(&mut conn, "SELECT 1;\nSELECT nme FROM customers").await;
    assert_eq!(column["diagnostics"][0]["code"], "unknown_column");
    assert_eq!(column["diagnostics"][0]["path"], range(2, 8, 2, 11));
    assert_eq!(column["diagnostics"][0]["hint"], "close match: name");

    let ambiguous =
        validate(&mut conn, "SELECT id FROM customers JOIN orders ON orders.customer_id = customers.id")
            .await;
    assert_eq!(ambiguous["diagnostics"][0]["code"], "ambiguous_column");
    assert_eq!(ambiguous["diagnostics"][0]["path"], range(1, 8, 1, 10));
    assert_eq!(ambiguous["diagnostics"][0]["hint"], "qualify it: customers.id or orders.id");

    let typed = validate(
        &mut conn,
        "INSERT INTO orders (customer_id, item, quantity, price) VALUES (1, 'pen', 'two', 1.5)",
    )
    .await;
    assert_eq!(typed["diagnostics"][0]["code"], "type_mismatch");
    assert_eq!(typed["diagnostics"][0]["path"], range(1, 75, 1, 80));

    let fallback = validate(&mut conn, "INSERT INTO customers (name, email) VALUES ('x')").await;
    assert_eq!(fallback["diagnostics"][0]["code"], "constraint");
    assert_eq!(fallback["diagnostics"][0]["message"], "SQLite refuses the statement: 1 values for 2 columns");

    let not_text = conn.call_ok("validate_sql", json!({"query": {"select": "*"}})).await;
    assert_eq!(not_text["valid"], json!(false));
    assert_eq!(not_text["diagnostics"][0]["code"], "malformed_program");
    assert_eq!(not_text["diagnostics"][0]["path"], range(1, 1, 1, 1));
    let empty = validate(&mut conn, "-- nothing\n").await;
    assert_eq!(empty["diagnostics"][0]["path"], range(1, 1, 2, 1), "whole-document range");

    let with_context = conn.call_ok("validate_sql", json!({"query": "SELECT 1", "context": {}})).await;
    assert_eq!(with_context["diagnostics"][0]["code"], "context_binding");
}

#[tokio::test]
async fn forbidden_statements_are_rejected() {
    let http = HttpServer::start(&server()).await;
    let mut conn = session(&http).await;
    for (query, at) in [
        ("ATTACH DATABASE '/tmp/other.db' AS other", range(1, 1, 1, 7)),
        ("SELECT 1;\nPRAGMA foreign_keys = OFF", range(2, 1, 2, 7)),
        ("VACUUM INTO '/tmp/copy.db'", range(1, 1, 1, 7)),
        ("SELECT load_extension('/tmp/evil.so')", range(1, 8, 1, 22)),
        ("CREATE TABLE t (a)", range(1, 1, 1, 7)),
        ("DROP VIEW order_totals", range(1, 1, 1, 5)),
    ] {
        let v = validate(&mut conn, query).await;
        assert_eq!(v["valid"], json!(false), "{query}");
        let codes: Vec<(&Value, &Value)> =
            v["diagnostics"].as_array().unwrap().iter().map(|d| (&d["code"], &d["path"])).collect();
        assert_eq!(codes, [(&json!("forbidden_statement"), &at)], "{query}");
    }
    // The execute door re-validates: nothing runs.
    let before = fingerprint(&mut conn).await;
    let refused =
        conn.call_ok("run_sql", json!({"query": "DELETE FROM orders; PRAGMA foreign_keys = OFF"})).await;
    assert_eq!(
        refused["outcome"],
        json!({"ok": false, "status": "validation_error", "error": "the program failed validation"})
    );
    assert_eq!(refused["diagnostics"][0]["code"], "forbidden_statement");
    assert_eq!(refused["diagnostics"][0]["path"], range(1, 21, 1, 27));
    assert!(refused.get("trace").is_none());
    assert_eq!(fingerprint(&mut conn).await, before);
    // Invisible names (SQLite's own tables) are unknown and never suggested.
    let hidden = validate(&mut conn, "SELECT * FROM sqlite_master").await;
    assert_eq!(hidden["diagnostics"][0]["code"], "unknown_table");
    assert_eq!(hidden["diagnostics"][0]["hint"], "list the tables and views with pilotage_catalog");
}

#[tokio::test]
async fn destructive_plan_and_max_risk_hints() {
    let http = HttpServer::start(&server()).await;
    let mut conn = session(&http).await;
    let v = validate(
        &mut conn,
        "SELECT count(*) FROM orders WHERE customer_id = 3;\nDELETE FROM orders WHERE customer_id = 3;\nUPDATE customers SET tier = 'bronze'",
    )
    .await;
    assert_eq!(v["valid"], json!(true), "{v}");
    assert_eq!(
        v["plan"],
        json!({
            "steps": [
                step("stmt-1", None, "safe"),
                step("stmt-1.ref-1", Some("orders"), "safe"),
                step("stmt-2", None, "destructive"),
                step("stmt-2.ref-1", Some("orders"), "destructive"),
                step("stmt-3", None, "destructive"),
                step("stmt-3.ref-1", Some("customers"), "destructive"),
            ],
            "max_risk": "destructive",
            "max_risk_hints": hints(false, true)
        })
    );
    let write = validate(&mut conn, "UPDATE customers SET tier = 'bronze' WHERE id = 1").await;
    assert_eq!(write["plan"]["max_risk"], "write");
    assert_eq!(write["plan"]["max_risk_hints"], hints(false, false));
}

#[tokio::test]
async fn execute_traces_every_statement_and_fetches_it_again() {
    let http = HttpServer::start(&server()).await;
    let mut conn = session(&http).await;
    let query = "UPDATE customers SET tier = :tier WHERE id = :id;\nSELECT t.name, t.orders, t.total FROM order_totals AS t JOIN customers AS c ON c.id = t.customer_id WHERE c.tier = :tier ORDER BY t.name";
    let validated = validate(&mut conn, query).await;
    let cv = validated["catalog_version"].clone();
    let plan_ids: Vec<Value> =
        validated["plan"]["steps"].as_array().unwrap().iter().map(|s| s["id"].clone()).collect();
    let ran = conn
        .call_ok(
            "run_sql",
            json!({"query": query, "input": {"tier": "gold", "id": 3}, "expected_catalog_version": cv}),
        )
        .await;
    assert_eq!(ran["outcome"], json!({"ok": true, "status": "success", "error": null}));
    let rows = json!({"columns": ["name", "orders", "total"], "rows": [["Amira Hassan", 2, 87.5], ["Mei Chen", 1, 13.5]]});
    assert_eq!(ran["output"], rows);
    let trace = &ran["trace"];
    assert_eq!(trace["level"], "full");
    let trace_ids: Vec<Value> = trace["steps"].as_array().unwrap().iter().map(|s| s["id"].clone()).collect();
    assert_eq!(trace_ids, plan_ids, "plan and trace share their identifiers");
    assert_eq!(trace_ids, ["stmt-1", "stmt-1.ref-1", "stmt-2", "stmt-2.ref-1", "stmt-2.ref-2"]);
    let steps = trace["steps"].as_array().unwrap();
    assert_eq!(
        steps[0]["input"],
        json!({"sql": "UPDATE customers SET tier = :tier WHERE id = :id", "params": {"tier": "gold", "id": 3}})
    );
    assert_eq!(steps[0]["output"], json!({"changes": 1}));
    assert_eq!(steps[1]["calls"], "customers");
    assert_eq!(steps[1]["input"], json!({"access": "update"}));
    assert_eq!(steps[1]["output"], Value::Null);
    assert_eq!(steps[3]["calls"], "order_totals");
    assert_eq!(steps[4]["calls"], "customers");
    assert_eq!(steps[2]["output"], rows);
    for s in steps {
        assert_eq!(s["outcome"], json!({"ok": true, "status": "success", "error": null}));
    }
    let run_id = ran["run_id"].as_str().unwrap();
    let fetched = conn.call_ok("trace_sql", json!({"run_id": run_id})).await;
    assert_eq!(fetched["outcome"], ran["outcome"]);
    assert_eq!(fetched["output"], rows);
    assert_eq!(fetched["trace"]["steps"], trace["steps"]);

    // Summary: no inputs, outputs over 256 bytes truncated in the documented form.
    let wide = "SELECT * FROM customers, orders ORDER BY customers.id, orders.id";
    let full = conn.call_ok("run_sql", json!({"query": wide})).await;
    let text = full["trace"]["steps"][0]["output"].to_string();
    assert!(text.len() > 256);
    let summary = conn.call_ok("run_sql", json!({"query": wide, "trace_level": "summary"})).await;
    let s0 = &summary["trace"]["steps"][0];
    assert_eq!(summary["trace"]["level"], "summary");
    assert!(s0.get("input").is_none());
    let preview: String = text.chars().take(200).collect();
    assert_eq!(s0["output"], json!({"truncated": true, "bytes": text.len(), "preview": preview}));
    assert_eq!(summary["output"], full["output"], "the run's output is never truncated");
}

#[tokio::test]
async fn mid_program_failure_is_partial_and_rolled_back() {
    let http = HttpServer::start(&server()).await;
    let mut conn = session(&http).await;
    let before = fingerprint(&mut conn).await;
    assert_eq!(before["rows"], json!({"customers": 3, "orders": 4}));
    let ran = conn
        .call_ok(
            "run_sql",
            json!({"query": "UPDATE customers SET tier = 'gold' WHERE id = 2;\nINSERT INTO orders (customer_id, item, quantity, price) VALUES (2, 'desk', 1, 99.0);\nDELETE FROM customers WHERE id = 1;\nSELECT 1"}),
        )
        .await;
    assert_eq!(
        ran["outcome"],
        json!({
            "ok": false,
            "status": "partial",
            "error": "stmt-3 failed: FOREIGN KEY constraint failed; the transaction was rolled back: no change persists"
        })
    );
    assert!(ran.get("output").is_none());
    let steps = ran["trace"]["steps"].as_array().unwrap();
    let ids: Vec<&str> = steps.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["stmt-1", "stmt-1.ref-1", "stmt-2", "stmt-2.ref-1", "stmt-3"]);
    assert_eq!(steps[2]["output"], json!({"changes": 1}));
    assert_eq!(
        steps[4]["outcome"],
        json!({"ok": false, "status": "constraint_violated", "error": "FOREIGN KEY constraint failed"})
    );
    assert_eq!(steps[4]["output"], Value::Null);
    assert_eq!(fingerprint(&mut conn).await, before, "the transaction rolled back");

    let first = conn
        .call_ok(
            "run_sql",
            json!({"query": "INSERT INTO customers (name, email) VALUES ('Dup', 'amira@example.com')"}),
        )
        .await;
    assert_eq!(
        first["outcome"],
        json!({
            "ok": false,
            "status": "error",
            "error": "stmt-1 failed: UNIQUE constraint failed: customers.email; the transaction was rolled back: no change persists"
        })
    );
    assert_eq!(fingerprint(&mut conn).await, before);
}

#[tokio::test]
async fn catalog_moves_with_the_schema_not_with_rows() {
    let http = HttpServer::start(&server()).await;
    let mut conn = session(&http).await;
    let list = conn.call_ok("pilotage_catalog", json!({"language": "sql/sqlite-3", "verb": "list"})).await;
    let cv1 = list["catalog_version"].as_str().unwrap().to_owned();
    let summary: Vec<(&str, &str, &str)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["id"].as_str().unwrap(), e["kind"].as_str().unwrap(), e["risk"].as_str().unwrap()))
        .collect();
    assert_eq!(
        summary,
        [
            ("customers", "table", "destructive"),
            ("order_totals", "view", "safe"),
            ("orders", "table", "destructive")
        ]
    );
    let customers = conn
        .call_ok("pilotage_catalog", json!({"language": "sql/sqlite-3", "verb": "get", "id": "customers"}))
        .await;
    assert_eq!(customers["entry"]["risk_hints"], hints(false, true));
    assert_eq!(customers["entry"]["tags"], json!(["table", "strict"]));
    assert_eq!(customers["entry"]["input_schema"]["required"], json!(["name", "email"]));
    assert_eq!(
        customers["entry"]["output_schema"]["properties"]["tier"],
        json!({"type": "string", "description": "TEXT NOT NULL"})
    );
    let missing = conn
        .call("pilotage_catalog", json!({"language": "sql/sqlite-3", "verb": "get", "id": "sqlite_schema"}))
        .await;
    assert_eq!(error_kind(&missing), "not_found");
    let since = conn
        .call(
            "pilotage_catalog",
            json!({"language": "sql/sqlite-3", "verb": "changed_since", "catalog_version": cv1}),
        )
        .await;
    assert_eq!(error_kind(&since), "invalid_request", "sql/sqlite-3 does not declare catalog.changed_since");

    // Rows change: the version does not.
    let insert = "INSERT INTO customers (name, email) VALUES ('Ana Lima', 'ana@example.com')";
    let ran = conn.call_ok("run_sql", json!({"query": insert, "expected_catalog_version": cv1})).await;
    assert_eq!(ran["outcome"]["status"], "success");
    let again = conn.call_ok("pilotage_catalog", json!({"language": "sql/sqlite-3", "verb": "list"})).await;
    assert_eq!(again["catalog_version"], json!(cv1));

    // The schema changes through the admin tool: the version moves, execute refuses drift.
    let applied =
        conn.call_ok("sql_schema_apply", json!({"ddl": "ALTER TABLE customers ADD COLUMN phone TEXT"})).await;
    let cv2 = applied["catalog_version"].as_str().unwrap().to_owned();
    assert_ne!(cv2, cv1);
    assert_eq!(applied["applied"], json!(1));
    let drift = conn
        .call_ok("run_sql", json!({"query": "SELECT phone FROM customers", "expected_catalog_version": cv1}))
        .await;
    assert_eq!(
        drift["outcome"],
        json!({"ok": false, "status": "catalog_drift", "error": "catalog version mismatch"})
    );
    assert!(drift.get("trace").is_none());
    let fresh = validate(&mut conn, "SELECT phone FROM customers").await;
    assert_eq!(fresh["catalog_version"], json!(cv2));
    let ok = conn
        .call_ok(
            "run_sql",
            json!({"query": "SELECT phone FROM customers WHERE id = 1", "expected_catalog_version": cv2}),
        )
        .await;
    assert_eq!(ok["output"], json!({"columns": ["phone"], "rows": [[null]]}));

    // Entries come and go with the create and drop tools.
    let created = conn
        .call_ok(
            "sql_create_table",
            json!({"name": "notes", "columns": {"id": "INTEGER PRIMARY KEY", "body": "TEXT NOT NULL"}}),
        )
        .await;
    let cv3 = created["catalog_version"].as_str().unwrap().to_owned();
    assert_ne!(cv3, cv2);
    assert_eq!(created["created"]["kind"], "table");
    let v = validate(&mut conn, "INSERT INTO notes (body) VALUES ('hello')").await;
    assert_eq!(v["plan"]["steps"][1], step("stmt-1.ref-1", Some("notes"), "write"));
    let dropped = conn.call_ok("sql_drop_table", json!({"name": "notes"})).await;
    assert_eq!(dropped["catalog_version"], json!(cv2), "same schema, same version");
    let refused = conn.call("sql_drop_table", json!({"name": "notes"})).await;
    assert!(refused.is_error);
    let trigger = conn
        .call(
            "sql_schema_apply",
            json!({"ddl": "CREATE TRIGGER t AFTER INSERT ON orders BEGIN DELETE FROM orders; END"}),
        )
        .await;
    assert!(trigger.is_error);
}

#[tokio::test]
async fn input_binding_good_and_bad() {
    let http = HttpServer::start(&server()).await;
    let mut conn = session(&http).await;
    let before = fingerprint(&mut conn).await;
    let query = "UPDATE orders SET quantity = :qty WHERE id = :id";
    let bad = conn.call_ok("run_sql", json!({"query": query, "input": {"qty": [2], "extra": 1}})).await;
    assert_eq!(
        bad["outcome"],
        json!({"ok": false, "status": "validation_error", "error": "the input failed binding"})
    );
    let found: Vec<(&Value, &Value)> =
        bad["diagnostics"].as_array().unwrap().iter().map(|d| (&d["code"], &d["path"])).collect();
    assert_eq!(
        found,
        [
            (&json!("input_binding"), &json!("/qty")),
            (&json!("input_binding"), &json!("/id")),
            (&json!("input_binding"), &json!("/extra"))
        ]
    );
    assert!(bad.get("trace").is_none());
    let none = conn.call_ok("run_sql", json!({"query": query})).await;
    assert_eq!(none["outcome"]["status"], "validation_error");
    assert_eq!(none["diagnostics"].as_array().unwrap().len(), 2);
    let unused = conn.call_ok("run_sql", json!({"query": "SELECT 1", "input": {"id": 1}})).await;
    assert_eq!(unused["diagnostics"][0]["path"], "/id");
    assert_eq!(fingerprint(&mut conn).await, before);

    let good = conn.call_ok("run_sql", json!({"query": query, "input": {"qty": 5, "id": 4}})).await;
    assert_eq!(good["outcome"]["status"], "success");
    assert_eq!(good["output"], json!({"changes": 1}));
    assert_eq!(good["trace"]["steps"][0]["input"]["params"], json!({"qty": 5, "id": 4}));
    let check = conn
        .call_ok(
            "run_sql",
            json!({"query": "SELECT quantity FROM orders WHERE id = :id", "input": {"id": 4}}),
        )
        .await;
    assert_eq!(check["output"], json!({"columns": ["quantity"], "rows": [[5]]}));
    // A parameter that a STRICT column cannot store fails the run (and rolls back).
    let typed = conn.call_ok("run_sql", json!({"query": query, "input": {"qty": "many", "id": 4}})).await;
    assert_eq!(typed["outcome"]["status"], "error");
    assert_eq!(typed["trace"]["steps"][0]["outcome"]["status"], "constraint_violated");
    let bad_placeholder = validate(&mut conn, "SELECT * FROM orders WHERE id = ?1").await;
    assert_eq!(bad_placeholder["diagnostics"][0]["code"], "bad_placeholder");
    assert_eq!(bad_placeholder["diagnostics"][0]["path"], range(1, 33, 1, 35));
}

#[tokio::test]
async fn sessions_work_on_private_copies() {
    let http = HttpServer::start(&server()).await;
    let mut a = session(&http).await;
    let mut b = session(&http).await;
    let fresh = fingerprint(&mut b).await;
    let ran = a.call_ok("run_sql", json!({"query": "DELETE FROM orders"})).await;
    assert_eq!(ran["output"], json!({"changes": 4}));
    assert_eq!(fingerprint(&mut a).await["rows"], json!({"customers": 3, "orders": 0}));
    assert_eq!(fingerprint(&mut b).await, fresh, "session b never sees session a's writes");
}

fn temp_db(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pilotage-sql-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("demo.sqlite")
}

#[tokio::test]
async fn the_sql_binary_over_stdio_copies_its_database_file() {
    let path = temp_db("stdio");
    let mut conn = Conn::stdio("sql", &["--db", path.to_str().unwrap()]);
    conn.initialize(true).await;
    assert!(path.exists(), "the demo database was created on first start");
    let on_disk = std::fs::read(&path).unwrap();
    let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
    assert_eq!(manifest["languages"][0]["name"], "sql/sqlite-3");
    let ran = conn.call_ok("run_sql", json!({"query": "DELETE FROM orders WHERE id = :id; SELECT count(*) AS n FROM orders", "input": {"id": 1}})).await;
    assert_eq!(ran["output"], json!({"columns": ["n"], "rows": [[3]]}));
    assert_eq!(std::fs::read(&path).unwrap(), on_disk, "programs never write the server's file");
    drop(conn);
    // A second process (a new session) starts from the unchanged file.
    let mut again = Conn::stdio("sql", &["--db", path.to_str().unwrap()]);
    again.initialize(true).await;
    let count = again.call_ok("run_sql", json!({"query": "SELECT count(*) FROM orders"})).await;
    assert_eq!(count["output"]["rows"], json!([[4]]));
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn nesting_past_the_parser_bound_is_bounds_exceeded_not_a_diagnostic() {
    let http = HttpServer::start(&server()).await;
    let mut conn = session(&http).await;
    let shallow = format!("SELECT {}1{}", "(".repeat(10), ")".repeat(10));
    let ok = conn.call("validate_sql", json!({"query": shallow})).await;
    assert!(!ok.is_error, "{}", ok.raw);
    assert_eq!(ok.structured["valid"], true);
    let deep = format!("SELECT {}1{}", "(".repeat(60), ")".repeat(60));
    let refused = conn.call("validate_sql", json!({"query": deep})).await;
    assert!(refused.is_error, "{}", refused.raw);
    assert_eq!(refused.structured["error"]["kind"], "bounds_exceeded");
    let run =
        conn.call("run_sql", json!({"query": format!("SELECT {}1{}", "(".repeat(60), ")".repeat(60))})).await;
    assert!(run.is_error, "re-validation is bounded the same way: {}", run.raw);
    assert_eq!(run.structured["error"]["kind"], "bounds_exceeded");
}
