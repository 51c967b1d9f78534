//! `pilotage::host` against the example engines, through real transports: the workflow and
//! calc binaries over stdio, the workflow engine over Streamable HTTP (a session), the
//! automation engine statelessly (MCP 2026-07-28). Every request is built from discovery:
//! calc's validate tool is `validate_calc` and its program argument `calc`; sql's is `query`.

use pilotage::host::{
    Attempt, ExecuteOptions, Execution, GateReason, Host, HostError, RunStatus, UNVERIFIED_CLAIMS,
};
use pilotage::model::errors::ErrorKind;
use serde_json::json;

use crate::host_kit::{ran, user_42, workflow_call, Recording};
use crate::support::{example_binary, HttpServer};
use crate::{automation, workflow};

fn binary(name: &str) -> String {
    example_binary(name).display().to_string()
}

/// The whole loop on the workflow binary over stdio: discovery, guides, an invalid program as
/// a value, the refusal to execute it, a read-only Run the gate lets through without asking,
/// and a destructive one it holds until the approver grants it.
#[tokio::test]
async fn workflow_over_stdio_runs_the_loop_and_gates_the_destructive_plan() {
    let denying = Recording::denying();
    let host = Host::stdio(&binary("workflow")).approver(denying.clone()).connect().await.unwrap();
    assert_eq!(host.languages(), ["workflow/v1"]);
    let wf = host.language("workflow/v1").unwrap();
    let guides = wf.guides().await.unwrap();
    let core = guides.iter().find(|g| g.id == "core").expect("a core guide");
    let fetched = wf.guide(&core.id).await.unwrap();
    assert_eq!(fetched.body.as_ref().map(String::len), Some(core.size_bytes as usize));
    assert_eq!(wf.guide("no-such-guide").await.unwrap_err().request_kind(), Some(ErrorKind::NotFound));

    let invalid = wf.validate(workflow_call("cap_read_user_profil")).await.unwrap();
    assert!(!invalid.valid());
    assert_eq!(invalid.diagnostics()[0].code, "unknown_capability");
    let refused = wf.execute(&invalid, &ExecuteOptions::default()).await.unwrap_err();
    assert!(matches!(refused, HostError::Loop(_)), "{refused:?}");

    let options = ExecuteOptions { input: Some(user_42()), ..ExecuteOptions::default() };
    let read = ran(wf.run(workflow_call("cap_read_user_profile"), &options).await.unwrap());
    assert_eq!(read.status, RunStatus::Success);
    assert_eq!(read.response.output.as_ref().unwrap()["result"]["name"], "Amira Hassan");
    assert!(read.response.trace.is_some(), "execute asks for a trace of at least summary");
    assert!(denying.asked().is_empty(), "a read-only plan needs no approval");

    let delete = wf.run(workflow_call("cap_delete_user"), &options).await.unwrap();
    let Attempt::Executed(Execution::Denied(denial)) = delete else { panic!("{delete:?}") };
    assert_eq!(denial.request.reasons, [GateReason::Destructive]);
    assert_eq!(denying.asked().len(), 1);
    assert_eq!(denying.asked()[0].unverified_claims, UNVERIFIED_CLAIMS);
    assert!(denying.asked()[0].plan.as_ref().unwrap().max_risk_hints.destructive);
    // The user still exists: the server never saw the execute request.
    let again = ran(wf.run(workflow_call("cap_read_user_profile"), &options).await.unwrap());
    assert_eq!(again.status, RunStatus::Success);

    let granting = Recording::granting();
    let host = Host::stdio(&binary("workflow")).approver(granting.clone()).connect().await.unwrap();
    let wf = host.language("workflow/v1").unwrap();
    let deleted = ran(wf.run(workflow_call("cap_delete_user"), &options).await.unwrap());
    assert_eq!(deleted.status, RunStatus::Success, "{:?}", deleted.response);
    assert_eq!(deleted.response.output.as_ref().unwrap()["result"]["deleted"], true);
    assert_eq!(granting.asked().len(), 1);
}

/// calc over stdio: its tools are named by its manifest (`validate_calc`, `run_calc`) and its
/// program argument by its declaration (`calc`).
#[tokio::test]
async fn calc_over_stdio_is_driven_from_its_own_names() {
    let host = Host::stdio(&binary("calc")).connect().await.unwrap();
    let calc = host.language("calc/v1").unwrap();
    assert_eq!(host.manifest().languages[0].loop_tools.validate, "validate_calc");
    let verdict = calc.validate(json!({"op": "mul"})).await.unwrap();
    assert!(!verdict.valid());
    let sum = ran(calc.run(json!({"op": "add", "args": [1, 2]}), &ExecuteOptions::default()).await.unwrap());
    assert_eq!(sum.status, RunStatus::Success);
    assert_eq!(sum.response.output, Some(json!({"sum": 3.0})));
    // `no_input`: a Run given input is refused, as a value.
    let options = ExecuteOptions { input: Some(json!({"x": 1})), ..ExecuteOptions::default() };
    let refused = ran(calc.run(json!({"op": "add", "args": [1]}), &options).await.unwrap());
    assert_eq!(refused.status, RunStatus::ValidationError, "{:?}", refused.response);
}

/// sql over stdio: a text Language whose program argument is `query`; the gate shows the
/// program text.
#[tokio::test]
async fn sql_over_stdio_takes_its_program_as_query() {
    let dir = std::env::temp_dir().join(format!("pilotage-host-sql-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("shop.sqlite").display().to_string();
    let approver = Recording::denying();
    let host = Host::command(binary("sql"), vec!["--db".into(), db])
        .approver(approver.clone())
        .connect()
        .await
        .unwrap();
    let name = host.languages().into_iter().find(|l| l.starts_with("sql/")).expect("an sql Language");
    let sql = host.language(&name).unwrap();
    let verdict = sql.validate(json!("SELEC 1")).await.unwrap();
    assert!(!verdict.valid());
    let read = ran(sql.run(json!("SELECT name FROM customers"), &ExecuteOptions::default()).await.unwrap());
    assert!(read.response.outcome.ok(), "{:?}", read.response);
    assert!(approver.asked().is_empty(), "a read-only plan needs no approval");
    let delete = sql.run(json!("DELETE FROM orders"), &ExecuteOptions::default()).await.unwrap();
    let Attempt::Executed(Execution::Denied(denial)) = delete else { panic!("{delete:?}") };
    assert_eq!(denial.request.program_text(), Some("DELETE FROM orders"));
    assert_eq!(denial.request.reasons, [GateReason::Destructive]);
    assert_eq!(approver.asked().len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The workflow engine over Streamable HTTP with a session.
#[tokio::test]
async fn workflow_over_http_with_a_session() {
    let server = pilotage::Server::builder().language(workflow::Workflow::new).build().unwrap();
    let http = HttpServer::start(&server).await;
    let host = Host::http(http.url()).connect().await.unwrap();
    let wf = host.language("workflow/v1").unwrap();
    let options = ExecuteOptions { input: Some(user_42()), ..ExecuteOptions::default() };
    let read = ran(wf.run(workflow_call("cap_read_user_profile"), &options).await.unwrap());
    assert_eq!(read.status, RunStatus::Success);
    let denied = wf.run(workflow_call("cap_delete_user"), &options).await.unwrap();
    assert!(matches!(denied, Attempt::Executed(Execution::Denied(_))), "{denied:?}");
}

/// The automation engine statelessly (MCP 2026-07-28): no session, the capabilities in every
/// request's `_meta`, discovery through `server/discover`.
#[tokio::test]
async fn automation_over_stateless_http() {
    // Declared first, dropped last: the database and its -wal and -shm files go once the
    // server has closed them, whatever the test's end.
    let store = pilotage::testkit::TempStore::new("host-automation");
    let runs = store.open();
    let server = pilotage::Server::builder()
        .language(automation::Automation::new)
        .state(std::sync::Arc::new(runs))
        .stateless(true)
        .anonymous_sessionless()
        .build()
        .unwrap();
    let options =
        pilotage::transport::HttpOptions { stateless: true, allowed_hosts: None, ..Default::default() };
    let http = HttpServer::start_with(&server, options).await;
    let host = Host::http(http.url()).stateless().approver(Recording::granting()).connect().await.unwrap();
    let auto = host.language("automation/v1").unwrap();
    let options =
        ExecuteOptions { context: Some(json!({"timezone": "Europe/Paris"})), ..ExecuteOptions::default() };
    let set = ran(auto.run(json!({"steps": [{"id": "s", "set": 1}]}), &options).await.unwrap());
    assert_eq!(set.status, RunStatus::Success, "{:?}", set.response);
    assert!(set.idempotency_key.is_some(), "automation declares idempotency: the Host sends a fresh key");
}
