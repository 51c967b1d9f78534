//! One server, two Languages: the `combined` example binary over stdio (and the `sql`
//! example's `--with-workflow` flag): one manifest with server-level defaults and each
//! Language's effective map, and the shared access tools routing by `language`.

use crate::support;

use serde_json::{json, Value};
use support::Conn;

fn temp_db(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pilotage-combined-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("demo.sqlite")
}

fn error_kind(call: &support::ToolCall) -> &str {
    assert!(call.is_error, "expected a request error: {}", call.raw);
    call.structured["error"]["kind"].as_str().unwrap_or_default()
}

fn workflow_entry(capabilities: Value) -> Value {
    json!({
        "name": "workflow/v1",
        "title": "Workflow documents",
        "guides": "pilotage_get_guide",
        "catalog": "pilotage_catalog",
        "loop": {"validate": "validate_workflow", "execute": "run_workflow", "trace": "trace_run"},
        "capabilities": capabilities,
        "locator": "json-pointer",
        "execution": "immediate",
        "trace": "full",
        "retention": "session"
    })
}

fn sql_entry() -> Value {
    json!({
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
    })
}

fn full_caps() -> Value {
    json!({
        "guides": true,
        "catalog": {"search": true, "changed_since": true},
        "validate": true,
        "plan": true,
        "execute": true,
        "trace_fetch": true
    })
}

#[tokio::test]
async fn combined_manifest_defaults_overrides_and_routing() {
    let path = temp_db("main");
    let mut conn = Conn::stdio("combined", &["--db", path.to_str().unwrap()]);
    let init = conn.initialize(true).await;
    let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
    assert_eq!(
        manifest,
        json!({
            "pilotage": "1.1",
            "languages": [workflow_entry(full_caps()), sql_entry()],
            "capabilities": full_caps()
        }),
        "server-level defaults; sql/sqlite-3 overrides catalog (no changed_since); each entry carries its effective map"
    );
    let inline = &init["result"]["_meta"][support::EXT]["manifest"];
    assert_eq!(inline, &manifest);

    let tools = conn.tools_list().await;
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "catalog_add_entry",
            "catalog_remove_entry",
            "catalog_update_entry",
            "inject_fault",
            "pilotage_catalog",
            "pilotage_get_guide",
            "pilotage_manifest",
            "run_sql",
            "run_workflow",
            "sql_create_table",
            "sql_drop_table",
            "sql_schema_apply",
            "sql_world_fingerprint",
            "trace_run",
            "trace_sql",
            "validate_sql",
            "validate_workflow",
            "world_fingerprint"
        ]
    );

    // Guides route by language.
    let ids = |v: &Value| -> Vec<String> {
        v["guides"].as_array().unwrap().iter().map(|g| g["id"].as_str().unwrap().to_owned()).collect()
    };
    let wf = conn.call_ok("pilotage_get_guide", json!({"language": "workflow/v1"})).await;
    assert_eq!(ids(&wf), ["closed-sets", "core", "examples"]);
    let sq = conn.call_ok("pilotage_get_guide", json!({"language": "sql/sqlite-3"})).await;
    assert_eq!(ids(&sq), ["sql-closed-sets", "sql-core", "sql-examples"]);
    let core =
        conn.call_ok("pilotage_get_guide", json!({"language": "sql/sqlite-3", "id": "sql-core"})).await;
    assert_eq!(core["guide"]["language"], "sql/sqlite-3");
    let crossed = conn.call("pilotage_get_guide", json!({"language": "workflow/v1", "id": "sql-core"})).await;
    assert_eq!(error_kind(&crossed), "not_found");
    let unknown = conn.call("pilotage_get_guide", json!({"language": "sql/postgres-15"})).await;
    assert_eq!(error_kind(&unknown), "not_found");

    // The catalog routes by language.
    let entries = |v: &Value| -> Vec<String> {
        v["items"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_owned()).collect()
    };
    let sql_list =
        conn.call_ok("pilotage_catalog", json!({"language": "sql/sqlite-3", "verb": "list"})).await;
    assert_eq!(entries(&sql_list), ["customers", "order_totals", "orders"]);
    let wf_list = conn
        .call_ok("pilotage_catalog", json!({"language": "workflow/v1", "verb": "list", "kind": "dataset"}))
        .await;
    assert_eq!(entries(&wf_list), ["ds_tiers"]);
    assert_ne!(sql_list["catalog_version"], wf_list["catalog_version"]);
    let wf_since = conn
        .call_ok("pilotage_catalog", json!({"language": "workflow/v1", "verb": "changed_since", "catalog_version": wf_list["catalog_version"]}))
        .await;
    assert_eq!(wf_since["changes"], json!([]));
    // `q` (workflow/v1 declares catalog.search) finds what a case-blind substring filter of the
    // whole list finds: from the snapshot's index for three bytes or more, by a scan below that.
    let all = conn.call_ok("pilotage_catalog", json!({"language": "workflow/v1", "verb": "list"})).await;
    for q in ["cap_list_users", "USERS", "Returns the", "ds_", "us", "e", "no such entry", "zzz"] {
        let found = conn
            .call_ok("pilotage_catalog", json!({"language": "workflow/v1", "verb": "list", "q": q}))
            .await;
        let lowered = q.to_lowercase();
        let expected: Vec<String> = all["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| {
                let text = |k: &str| e[k].as_str().is_some_and(|t| t.to_lowercase().contains(&lowered));
                text("id")
                    || text("name")
                    || text("description")
                    || e["tags"].as_array().is_some_and(|t| {
                        t.iter().any(|t| t.as_str().unwrap().to_lowercase().contains(&lowered))
                    })
            })
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(entries(&found), expected, "q = {q}");
        assert_eq!(found["catalog_version"], all["catalog_version"]);
    }
    let one = conn
        .call_ok(
            "pilotage_catalog",
            json!({"language": "workflow/v1", "verb": "list", "q": "cap_list_users"}),
        )
        .await;
    assert_eq!(entries(&one), ["cap_list_users"]);
    // changed_since reports exactly what changed, by id, and nothing from the new token.
    let before = entries(&all);
    let (first, last) = (before[0].clone(), before[before.len() - 1].clone());
    conn.call_ok("catalog_add_entry", json!({"id": "cap_aaa_added"})).await;
    conn.call_ok("catalog_update_entry", json!({"id": last, "description": "Changed."})).await;
    conn.call_ok("catalog_remove_entry", json!({"id": first})).await;
    let since = conn
        .call_ok("pilotage_catalog", json!({"language": "workflow/v1", "verb": "changed_since", "catalog_version": all["catalog_version"]}))
        .await;
    let mut expected = vec![
        json!({"id": "cap_aaa_added", "change": "added"}),
        json!({"id": first, "change": "removed"}),
        json!({"id": last, "change": "modified"}),
    ];
    expected.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    assert_eq!(since["changes"], json!(expected));
    assert_ne!(since["catalog_version"], all["catalog_version"]);
    let again = conn
        .call_ok("pilotage_catalog", json!({"language": "workflow/v1", "verb": "changed_since", "catalog_version": since["catalog_version"]}))
        .await;
    assert_eq!(again["changes"], json!([]));
    let sql_since = conn
        .call("pilotage_catalog", json!({"language": "sql/sqlite-3", "verb": "changed_since", "catalog_version": sql_list["catalog_version"]}))
        .await;
    assert_eq!(error_kind(&sql_since), "invalid_request", "the per-Language override removes changed_since");
    let unknown = conn.call("pilotage_catalog", json!({"language": "sql/postgres-15", "verb": "list"})).await;
    assert_eq!(error_kind(&unknown), "not_found");

    // Both loops run on the one server.
    let wf_run = conn
        .call_ok(
            "run_workflow",
            json!({"workflow": {"steps": [{"id": "u", "kind": "call", "capability": "cap_list_users"}]}}),
        )
        .await;
    assert_eq!(wf_run["outcome"]["status"], "success");
    let sql_run = conn
        .call_ok("run_sql", json!({"query": "SELECT name FROM customers WHERE tier = 'gold'", "expected_catalog_version": sql_list["catalog_version"]}))
        .await;
    assert_eq!(sql_run["output"], json!({"columns": ["name"], "rows": [["Amira Hassan"]]}));
    // A workflow run is not fetchable through the sql trace tool, and the other way round.
    let cross = conn.call("trace_sql", json!({"run_id": wf_run["run_id"]})).await;
    assert_eq!(error_kind(&cross), "not_found");
    let own = conn.call_ok("trace_run", json!({"run_id": wf_run["run_id"]})).await;
    assert_eq!(own["outcome"]["status"], "success");
    drop(conn);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn sql_example_with_workflow_flag_serves_both() {
    let path = temp_db("flag");
    let mut conn = Conn::stdio("sql", &["--db", path.to_str().unwrap(), "--with-workflow"]);
    conn.initialize(true).await;
    let manifest = conn.call_ok("pilotage_manifest", json!({})).await;
    assert_eq!(
        manifest,
        json!({"pilotage": "1.1", "languages": [workflow_entry(full_caps()), sql_entry()]}),
        "no server-level defaults: each entry declares its own map"
    );
    let v = conn.call_ok("validate_sql", json!({"query": "SELECT * FROM custmers"})).await;
    assert_eq!(v["diagnostics"][0]["hint"], "close match: customers");
    drop(conn);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
