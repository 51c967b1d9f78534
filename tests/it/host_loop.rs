//! The standard loop's Host duties (Part II §7.1, §7.2, §7.5) against a workflow server that
//! records every `tools/call`: what execute carries (`expected_catalog_version` from the
//! validation, a trace level of at least `summary`), `catalog_drift` recovery (validate again,
//! resume) and its bound, `promotion_drift` terminal (never retried nor revalidated), and
//! members the tool does not declare never sent.

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
    // Declared first, dropped last: the database and its -wal and -shm files go once the
    // server has closed them, whatever the test's end.
    let store = pilotage::testkit::TempStore::new("host-promoted");
    let runs = store.open();
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
}

/// `promotion_drift` is terminal (Part II §7.5): unlike `catalog_drift`, the Host neither
/// validates again nor resends execute; the outcome comes back once, typed
/// ([`RunStatus::PromotionDrift`]), with the server's words kept in the response.
#[tokio::test]
async fn promotion_drift_is_terminal_neither_retried_nor_revalidated() {
    let replace = Arc::new(|tool: &str, _: &Value| {
        (tool == "run_workflow").then(|| {
            Reply::Result(json!({
                "content": [{"type": "text", "text": "drift"}],
                "structuredContent": {"run_id": "r-pdrift", "outcome": {"ok": false, "status": "promotion_drift", "error": "the promoted body changed"}}
            }))
        })
    });
    let server = Wrapped::workflow(replace);
    let (url, task) = server.serve().await;
    // Recoveries allowed: none is spent on a promotion drift.
    let limits = HostLimits { max_drift_recoveries: 5, ..HostLimits::default() };
    let host = Host::http(&url).limits(limits).connect().await.unwrap();
    let options = ExecuteOptions { input: Some(user_42()), ..ExecuteOptions::default() };
    let run = ran(host
        .language("workflow/v1")
        .unwrap()
        .run(workflow_call("cap_read_user_profile"), &options)
        .await
        .unwrap());
    assert_eq!(run.status, RunStatus::PromotionDrift);
    assert_eq!(run.response.outcome.status(), "promotion_drift");
    assert_eq!(run.response.run_id, "r-pdrift");
    assert_eq!(server.count("validate_workflow"), 1, "not validated again");
    assert_eq!(server.count("run_workflow"), 1, "not sent again");
    task.abort();
}

/// Exact requests (`Host::call_tool`, the conformance runner's path) keep the gate: an execute
/// request is always held (no validation vouches for it) and, denied, never sent; other tools
/// go through without asking, and the answer comes back whatever it says.
#[tokio::test]
async fn an_exact_execute_request_is_held_by_the_gate() {
    let server = Wrapped::workflow(none());
    let (url, task) = server.serve().await;
    let program = workflow_call("cap_read_user_profile");
    let run = json!({"workflow": program, "input": user_42(), "trace_level": "summary"});
    let run = run.as_object().cloned().unwrap();
    let denying = Recording::denying();
    let host = Host::http(&url).approver(denying.clone()).connect().await.unwrap();
    let Err(HostError::Denied(denial)) = host.call_tool("run_workflow", run.clone()).await else {
        panic!("an exact execute request was not held")
    };
    assert_eq!(denial.request.reasons, [pilotage::host::GateReason::Unvalidated]);
    assert_eq!(denial.request.runnable, pilotage::host::Runnable::Program(program.clone()));
    assert_eq!(denial.request.unverified_claims, pilotage::host::UNVERIFIED_CLAIMS);
    assert_eq!(server.count("run_workflow"), 0, "the server saw no execute request");
    let validate = json!({"workflow": program}).as_object().cloned().unwrap();
    let answer = host.call_tool("validate_workflow", validate).await.unwrap();
    assert_eq!(answer.structured.unwrap()["valid"], true);
    assert_eq!(denying.asked().len(), 1, "validation needs no approval");
    // A request error comes back as the answer, and reads as a typed failure.
    let unknown = json!({"language": "workflow/v1", "id": "no-such-guide"}).as_object().cloned().unwrap();
    let answer = host.call_tool("pilotage_get_guide", unknown).await.unwrap();
    assert_eq!(answer.request_failure().map(|f| f.kind), Some(pilotage::model::errors::ErrorKind::NotFound));
    let read = answer.read::<Value>("pilotage_get_guide").unwrap_err();
    assert_eq!(read.request_kind(), Some(pilotage::model::errors::ErrorKind::NotFound));

    let granting = Recording::granting();
    let host = Host::http(&url).approver(granting.clone()).connect().await.unwrap();
    let answer = host.call_tool("run_workflow", run).await.unwrap();
    let response: pilotage::model::execution::ExecuteResponse = answer.read("run_workflow").unwrap();
    assert!(response.outcome.ok(), "{response:?}");
    assert_eq!((granting.asked().len(), server.count("run_workflow")), (1, 1));
    task.abort();
}
