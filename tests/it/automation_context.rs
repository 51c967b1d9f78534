//! Context rules (Part II §5.5, §6.4, §6.5.5): `automation/v1` declares a `context_schema`,
//! so missing context is a `context_binding` diagnostic with path `""`, malformed context one
//! with a path into `context`, in validate and execute alike; `workflow/v1` declares none, so
//! any supplied context is a `context_binding` diagnostic with path `""`.

use crate::{kit, support, workflow};

use kit::{ctx, Client, TempStore, ARG, PROMOTE, VALIDATE};
use serde_json::{json, Value};

fn server(store: &TempStore) -> pilotage::Server {
    kit::server_on(store.path(), None)
}

fn program() -> Value {
    json!({
        "steps": [
            {"id": "zone", "set": "$.context.timezone"},
            {"id": "add", "call": "counter_add", "with": {"by": 1}}
        ],
        "output": {"zone": "$.steps.zone.output"}
    })
}

/// `(code, path)` of every diagnostic.
fn found(v: &Value) -> Vec<(String, String)> {
    v["diagnostics"]
        .as_array()
        .unwrap_or_else(|| panic!("no diagnostics: {v}"))
        .iter()
        .map(|d| (d["code"].as_str().unwrap().to_owned(), d["path"].as_str().unwrap().to_owned()))
        .collect()
}

fn binding(path: &str) -> Vec<(String, String)> {
    vec![("context_binding".to_owned(), path.to_owned())]
}

#[tokio::test]
async fn context_rules_in_validate() {
    let store = TempStore::new("context");
    let mut c = Client::duplex(&server(&store)).await;
    let before = c.fingerprint().await;
    let missing = c.conn.call_ok(VALIDATE, json!({ARG: program()})).await;
    assert_eq!(missing["valid"], false);
    assert_eq!(found(&missing), binding(""));
    assert!(missing.get("plan").is_none());
    let wrong_type = c.conn.call_ok(VALIDATE, json!({ARG: program(), "context": {"timezone": 5}})).await;
    assert_eq!(found(&wrong_type), binding("/timezone"));
    let not_object = c.conn.call_ok(VALIDATE, json!({ARG: program(), "context": "Europe/Paris"})).await;
    assert_eq!(found(&not_object), binding(""));
    let ok = c
        .conn
        .call_ok(VALIDATE, json!({ARG: program(), "context": {"timezone": "UTC", "operator": "Ines"}}))
        .await;
    assert_eq!(ok["valid"], true, "{ok}");
    assert_eq!(ok["diagnostics"], json!([]));
    // A member the context does not have is a program finding, not a context one.
    let v = c.validate(&json!({"steps": [{"id": "z", "set": "$.context.zone"}]})).await;
    assert_eq!(found(&v), [("unknown_reference".to_owned(), "/steps/0/set".to_owned())]);
    assert_eq!(c.fingerprint().await, before, "validation has no side effects");
}

#[tokio::test]
async fn context_rules_in_execute() {
    let store = TempStore::new("context");
    let mut c = Client::duplex(&server(&store)).await;
    let (plan, version) = c.plan(&program()).await;
    let before = c.fingerprint().await;
    let run = |context: Option<Value>| {
        let mut a = json!({ARG: program(), "mode": "immediate", "expected_catalog_version": version});
        if let Some(ctx) = context {
            a["context"] = ctx;
        }
        a
    };
    for (context, path) in [
        (None, ""),
        (Some(json!({"timezone": ""})), "/timezone"),
        (Some(json!({"timezone": "UTC", "tz": 1})), ""),
    ] {
        let r = c.execute_with(&plan, run(context.clone())).await;
        assert!(!r.is_error, "{}", r.raw);
        assert_eq!(
            r.structured["outcome"],
            json!({"ok": false, "status": "validation_error", "error": "the program failed validation"}),
            "{context:?}"
        );
        assert_eq!(found(&r.structured), binding(path), "{context:?}");
        assert!(r.structured.get("trace").is_none());
    }
    assert_eq!(c.fingerprint().await, before, "refused runs have no side effects");
    let ok = c.execute_with(&plan, run(Some(json!({"timezone": "Asia/Tokyo"})))).await;
    assert_eq!(ok.structured["outcome"]["status"], "success");
    assert_eq!(ok.structured["output"], json!({"zone": "Asia/Tokyo"}));
}

#[tokio::test]
async fn context_rules_for_a_promoted_program() {
    let store = TempStore::new("context");
    let mut c = Client::duplex(&server(&store)).await;
    let (plan, _) = c.plan(&program()).await;
    let promoted = c.conn.call_ok(PROMOTE, json!({ARG: program(), "name": "Zone", "context": ctx()})).await;
    let reference = promoted["program_ref"].as_str().unwrap().to_owned();
    let missing = c.execute_with(&plan, json!({"program_ref": reference, "mode": "immediate"})).await;
    assert_eq!(missing.structured["outcome"]["status"], "validation_error");
    assert_eq!(found(&missing.structured), binding(""));
    let ok = c
        .execute_with(
            &plan,
            json!({"program_ref": reference, "mode": "immediate", "context": {"timezone": "UTC"}}),
        )
        .await;
    assert_eq!(ok.structured["output"], json!({"zone": "UTC"}));
    // Promotion validates exactly as validate does: without context it is refused, as a
    // result (an invalid program is never an error).
    let refused = c.conn.call(PROMOTE, json!({ARG: program(), "name": "Zone"})).await;
    assert!(!refused.is_error, "{}", refused.raw);
    assert_eq!(refused.structured["promoted"], false);
    assert_eq!(found(&refused.structured), binding(""));
}

#[tokio::test]
async fn a_language_without_context_schema_rejects_supplied_context() {
    let server =
        pilotage::Server::builder().name("wf", "0").language(workflow::Workflow::new).build().unwrap();
    let mut c = Client::duplex(&server).await;
    let program = support::scenario::profile_program("cap_read_user_profile");
    let v = c.conn.call_ok("validate_workflow", json!({"workflow": program, "context": {}})).await;
    assert_eq!(v["valid"], false);
    assert_eq!(found(&v), binding(""));
    let ok = c.conn.call_ok("validate_workflow", json!({"workflow": program})).await;
    assert_eq!(ok["valid"], true);
    let plan = kit::plan_of(&ok);
    let r = c
        .conn
        .call_ok(
            "run_workflow",
            json!({"workflow": program, "input": {"userId": "42"}, "context": {"tenant": "a"}}),
        )
        .await;
    kit::check_run(&plan, &r, false);
    assert_eq!(r["outcome"]["status"], "validation_error");
    assert_eq!(found(&r), binding(""));
    let ran = c.conn.call_ok("run_workflow", json!({"workflow": program, "input": {"userId": "42"}})).await;
    kit::check_run(&plan, &ran, false);
    assert_eq!(ran["outcome"]["status"], "success");
}
