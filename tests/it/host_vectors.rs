//! The two client vectors of the official suite, through Streamable HTTP on 127.0.0.1 against
//! a workflow server that counts every `tools/call` it receives:
//!
//! * `PIL-CLIENT-GATE-DESTRUCTIVE-B`: a destructive plan without approval is never
//!   transmitted (the server counts no call of the execute tool), and the approver was asked,
//!   with the unverified-claims statement.
//! * `PIL-CLIENT-VALUES-NOT-FAILURES-G`: `valid: false`, an `ok: false` outcome with a status
//!   nobody declared, and a request error of an unknown kind: each is read once (no retry), the
//!   loop goes on, the status reads as `partial`, the kind as `internal`.

use std::sync::Arc;

use pilotage::host::{
    Attempt, ExecuteOptions, Execution, GateReason, Host, HostError, RunStatus, UNVERIFIED_CLAIMS,
};
use pilotage::model::errors::ErrorKind;
use serde_json::json;

use crate::host_kit::{none, user_42, workflow_call, Recording, Reply, Wrapped};

#[tokio::test]
async fn pil_client_gate_destructive_b() {
    let server = Wrapped::workflow(none());
    let (url, task) = server.serve().await;
    let approver = Recording::denying();
    let host = Host::http(&url).approver(approver.clone()).connect().await.unwrap();
    let wf = host.language("workflow/v1").unwrap();
    let options = ExecuteOptions { input: Some(user_42()), ..ExecuteOptions::default() };
    let verdict = wf.validate(workflow_call("cap_delete_user")).await.unwrap();
    assert!(verdict.valid() && verdict.plan().unwrap().max_risk_hints.destructive);
    let execution = wf.execute(&verdict, &options).await.unwrap();
    let Execution::Denied(denial) = execution else { panic!("{execution:?}") };
    assert_eq!(denial.reason, "denied by the test");
    assert_eq!(denial.request.reasons, [GateReason::Destructive]);
    // The server never saw the execute request; it saw the validation.
    assert_eq!(server.count("run_workflow"), 0);
    assert_eq!(server.count("validate_workflow"), 1);
    // Approval was asked outside the Model, with the statement that the server's words are
    // unverified, and the plan to judge.
    let asked = approver.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].unverified_claims, UNVERIFIED_CLAIMS);
    assert!(asked[0].unverified_claims.contains("Unverified server claims"));
    assert_eq!(asked[0].plan.as_ref(), verdict.plan());
    // The same Run with approval granted is transmitted once: the counter can see it.
    let granting = Recording::granting();
    let host = Host::http(&url).approver(granting).connect().await.unwrap();
    let ran = host.language("workflow/v1").unwrap().execute(&verdict, &options).await.unwrap();
    assert!(matches!(ran, Execution::Ran(ref r) if r.status == RunStatus::Success), "{ran:?}");
    assert_eq!(server.count("run_workflow"), 1);
    task.abort();
}

#[tokio::test]
async fn pil_client_values_not_failures_g() {
    let replace = Arc::new(|tool: &str, _: &serde_json::Value| match tool {
        "run_workflow" => Some(Reply::Result(json!({
            "content": [{"type": "text", "text": "failed"}],
            "structuredContent": {"run_id": "run-x", "outcome": {"ok": false, "status": "meltdown_of_a_new_kind", "error": "it broke"}},
            "isError": false
        }))),
        "pilotage_get_guide" => Some(Reply::Result(json!({
            "content": [{"type": "text", "text": "error"}],
            "structuredContent": {"error": {"kind": "kind_from_the_future", "message": "no"}},
            "isError": true
        }))),
        _ => None,
    });
    let server = Wrapped::workflow(replace);
    let (url, task) = server.serve().await;
    let host = Host::http(&url).approver(Recording::granting()).connect().await.unwrap();
    let wf = host.language("workflow/v1").unwrap();
    let options = ExecuteOptions { input: Some(user_42()), ..ExecuteOptions::default() };

    // valid: false is a value: the loop hands it back for revision.
    let invalid = wf.run(workflow_call("cap_read_user_profil"), &options).await.unwrap();
    let Attempt::Invalid(verdict) = invalid else { panic!("{invalid:?}") };
    assert_eq!(verdict.diagnostics()[0].code, "unknown_capability");
    assert_eq!(server.count("validate_workflow"), 1, "no retry of a value");

    // The revised program runs; ok: false with an undeclared status reads as partial.
    let ran = wf.run(workflow_call("cap_read_user_profile"), &options).await.unwrap();
    let Attempt::Executed(Execution::Ran(ran)) = ran else { panic!("{ran:?}") };
    assert_eq!(ran.status, RunStatus::Partial);
    assert_eq!(ran.response.outcome.status(), "meltdown_of_a_new_kind");
    assert_eq!(server.count("run_workflow"), 1, "no retry of a failed outcome");

    // A request error of an unknown kind is a typed error of kind internal, not retried.
    let error = wf.guides().await.unwrap_err();
    let HostError::Request(failure) = error else { panic!("{error:?}") };
    assert_eq!(failure.kind, ErrorKind::Internal);
    assert_eq!(failure.wire_kind, "kind_from_the_future");
    assert_eq!(server.count("pilotage_get_guide"), 1);

    // And the loop is not abandoned: the connection still serves.
    assert!(wf.validate(workflow_call("cap_read_user_profile")).await.unwrap().valid());
    task.abort();
}
