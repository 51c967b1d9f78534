//! The standard loop's Host duties (Part II §7.1, §7.2, §7.5) against a workflow server that
//! records every `tools/call`: what execute carries (`expected_catalog_version` from the
//! validation, a trace level of at least `summary`), `catalog_drift` recovery (validate again,
//! resume) and its bound, and members the tool does not declare never sent.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pilotage::host::{
    ExecuteOptions, Execution, ExecutionMode, Host, HostError, HostLimits, RunStatus, TraceDetail,
};
use serde_json::{json, Value};

use crate::host_kit::{none, ran, user_42, workflow_call, Recording, Reply, Wrapped};

#[tokio::test]
async fn execute_carries_the_validations_token_and_a_trace_of_at_least_summary() {
    let server = Wrapped::workflow(none());
    let (url, task) = server.serve().await;
    let host = Host::http(&url).connect().await.unwrap();
    let wf = host.language("workflow/v1").unwrap();
    let ceiling = host.manifest().languages[0].trace.clone().unwrap();
    let verdict = wf.validate(workflow_call("cap_read_user_profile")).await.unwrap();
    let token = verdict.response().catalog_version.clone().expect("workflow/v1 is catalog-bearing");
    let options = ExecuteOptions { input: Some(user_42()), ..ExecuteOptions::default() };
    wf.execute(&verdict, &options).await.unwrap();
    let summary = ExecuteOptions { trace: Some(TraceDetail::Summary), ..options.clone() };
    wf.execute(&verdict, &summary).await.unwrap();
    let sent = server.arguments("run_workflow");
    assert_eq!(sent[0]["expected_catalog_version"], json!(token));
    assert_eq!(sent[0]["trace_level"], json!(ceiling));
    assert_eq!(sent[1]["trace_level"], "summary");
    assert_eq!(sent[0]["workflow"], *verdict.program());
    assert_eq!(sent[0]["input"], user_42());

    // A member the Language does not take is never sent: `mode` on a single-mode Language.
    let moded = ExecuteOptions { mode: Some(ExecutionMode::Deploy), ..options };
    let error = wf.execute(&verdict, &moded).await.unwrap_err();
    assert!(matches!(error, HostError::Unsupported(_)), "{error:?}");
    assert_eq!(server.count("run_workflow"), 2);
    task.abort();
}

fn drifting_first(times: usize) -> (Wrapped, Arc<AtomicUsize>) {
    let drifted = Arc::new(AtomicUsize::new(0));
    let seen = drifted.clone();
    let replace = Arc::new(move |tool: &str, _: &Value| {
        if tool != "run_workflow" || seen.fetch_add(1, Ordering::SeqCst) >= times {
            return None;
        }
        Some(Reply::Result(json!({
            "content": [{"type": "text", "text": "drift"}],
            "structuredContent": {"run_id": "r-drift", "outcome": {"ok": false, "status": "catalog_drift", "error": "the catalog moved"}}
        })))
    });
    (Wrapped::workflow(replace), drifted)
}

#[tokio::test]
async fn catalog_drift_is_recovered_by_validating_again_and_resuming() {
    let (server, _) = drifting_first(1);
    let (url, task) = server.serve().await;
    let host = Host::http(&url).connect().await.unwrap();
    let options = ExecuteOptions { input: Some(user_42()), ..ExecuteOptions::default() };
    let run = ran(host
        .language("workflow/v1")
        .unwrap()
        .run(workflow_call("cap_read_user_profile"), &options)
        .await
        .unwrap());
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(server.count("validate_workflow"), 2, "validated again after the drift");
    assert_eq!(server.count("run_workflow"), 2);

    // Bounded: with no recovery allowed, the drift is handed back as a value.
    let (server, _) = drifting_first(usize::MAX);
    let (url, task2) = server.serve().await;
    let limits = HostLimits { max_drift_recoveries: 1, ..HostLimits::default() };
    let host = Host::http(&url).limits(limits).approver(Recording::denying()).connect().await.unwrap();
    let run = ran(host
        .language("workflow/v1")
        .unwrap()
        .run(workflow_call("cap_read_user_profile"), &options)
        .await
        .unwrap());
    assert_eq!(run.status, RunStatus::CatalogDrift);
    assert_eq!(server.count("run_workflow"), 2, "one try and one recovery");
    task.abort();
    task2.abort();
}

/// The promoted-program loop (Part II §7.4): the entry is looked up, the gate applied to its
/// `risk_hints`, and the Run sent with the lookup's token; a destructive promoted program is
/// held, a writing one runs without asking.
#[tokio::test]
async fn promoted_programs_are_gated_on_their_entrys_risk() {
    let file = std::env::temp_dir().join(format!("pilotage-host-promoted-{}.sqlite", std::process::id()));
    let runs = pilotage::state::SqliteState::open(&file).unwrap();
    let server = pilotage::Server::builder()
        .language(crate::automation::Automation::new)
        .state(Arc::new(runs))
        .stateless(true)
        .anonymous_sessionless()
        .build()
        .unwrap();
    let options =
        pilotage::transport::HttpOptions { stateless: true, allowed_hosts: None, ..Default::default() };
    let http = crate::support::HttpServer::start_with(&server, options).await;
    let context = json!({"timezone": "Europe/Paris"});
    let mut references = Vec::new();
    for (name, body) in [
        ("clear", json!({"steps": [{"id": "clear", "call": "outbox_clear", "with": {}}]})),
        ("wait", json!({"steps": [{"id": "pause", "call": "wait", "with": {"ms": 1}}]})),
    ] {
        let args = json!({"name": "promote_automation", "arguments": {"automation": body, "name": name, "context": context}});
        let capabilities = json!({"extensions": {crate::support::EXT: {}}});
        let promoted =
            crate::support::stateless_request(http.url(), "tools/call", args, capabilities, None).await;
        references.push(promoted["result"]["structuredContent"]["program_ref"].as_str().unwrap().to_owned());
    }
    let approver = Recording::denying();
    let host = Host::http(http.url()).stateless().approver(approver.clone()).connect().await.unwrap();
    let auto = host.language("automation/v1").unwrap();
    let options = ExecuteOptions { context: Some(context), ..ExecuteOptions::default() };
    let held = auto.execute_promoted(&references[0], &options).await.unwrap();
    let Execution::Denied(denial) = held else { panic!("{held:?}") };
    assert_eq!(denial.request.entries.len(), 1);
    assert!(denial.request.entries[0].risk_hints.destructive);
    assert_eq!(approver.asked().len(), 1);
    let waited = auto.execute_promoted(&references[1], &options).await.unwrap();
    let Execution::Ran(ran) = waited else { panic!("{waited:?}") };
    assert_eq!(ran.status, RunStatus::Success, "{:?}", ran.response);
    assert_eq!(approver.asked().len(), 1, "a read-only promoted program needs no approval");
    let unknown = auto.execute_promoted("prog_0000", &options).await.unwrap_err();
    assert_eq!(unknown.request_kind(), Some(pilotage::model::errors::ErrorKind::NotFound));
    let _ = std::fs::remove_file(&file);
}
