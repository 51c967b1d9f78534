//! A Host survives a broken or hostile server: malformed `structuredContent`, a manifest that
//! breaks the schema, oversized guides, traces and answers, a server that never answers. Each
//! is a typed [`HostError`] within bounded time and memory ([`HostLimits`]), never a panic.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pilotage::host::{ExecuteOptions, Host, HostError, HostLimits};
use serde_json::{json, Value};

use crate::host_kit::{none, user_42, workflow_call, Override, Recording, Reply, Wrapped};

fn answer(structured: Value) -> Option<Reply> {
    Some(Reply::Result(json!({"content": [{"type": "text", "text": "x"}], "structuredContent": structured})))
}

fn replacing(tool: &'static str, reply: impl Fn() -> Option<Reply> + Send + Sync + 'static) -> Override {
    Arc::new(move |name: &str, _: &Value| if name == tool { reply() } else { None })
}

async fn connect(server: &Wrapped, limits: HostLimits) -> Result<Host, HostError> {
    let (url, _task) = server.serve().await;
    Host::http(url).limits(limits).approver(Recording::granting()).connect().await
}

#[tokio::test]
async fn malformed_structured_content_is_a_malformed_error() {
    for bad in [json!({"valid": "yes", "diagnostics": []}), json!({"diagnostics": [{"severity": 7}]})] {
        let server = Wrapped::workflow(replacing("validate_workflow", move || answer(bad.clone())));
        let host = connect(&server, HostLimits::default()).await.unwrap();
        let error = host.language("workflow/v1").unwrap().validate(json!({})).await.unwrap_err();
        assert!(
            matches!(&error, HostError::Malformed { what, .. } if what == "validate_workflow"),
            "{error:?}"
        );
    }
    let missing = Arc::new(|name: &str, _: &Value| {
        (name == "validate_workflow")
            .then(|| Reply::Result(json!({"content": [{"type": "text", "text": "valid"}]})))
    });
    let host = connect(&Wrapped::workflow(missing), HostLimits::default()).await.unwrap();
    let error = host.language("workflow/v1").unwrap().validate(json!({})).await.unwrap_err();
    assert_eq!(
        error,
        HostError::Malformed { what: "validate_workflow".into(), reason: "no structuredContent".into() }
    );
}

#[tokio::test]
async fn a_manifest_that_breaks_the_schema_is_refused() {
    for bad in [
        json!({"pilotage": "1.1", "languages": [{"name": 3}]}),
        json!({"pilotage": "2.0", "languages": []}),
        json!({"pilotage": "1.1", "languages": []}),
    ] {
        let server = Wrapped::workflow(replacing("pilotage_manifest", move || answer(bad.clone())));
        let error = connect(&server, HostLimits::default()).await.err().expect("refused");
        assert!(matches!(error, HostError::Manifest(_)), "{error:?}");
    }
    // The same server with its own manifest is discovered through `pilotage_manifest` (the
    // initialize metadata is removed by the wrapper).
    let server = Wrapped::workflow(none());
    assert!(connect(&server, HostLimits::default()).await.is_ok());
    assert_eq!(server.count("pilotage_manifest"), 1);
}

#[tokio::test]
async fn oversized_guides_traces_and_answers_are_refused() {
    let big = "x".repeat(2 * 1024 * 1024);
    let guide = move || {
        answer(
            json!({"guide": {"id": "core", "title": "t", "level": "core", "topics": [], "language": "workflow/v1",
            "version": "1", "size_bytes": big.len(), "format": "text/markdown", "body": big}}),
        )
    };
    let server = Wrapped::workflow(replacing("pilotage_get_guide", guide));
    let host = connect(&server, HostLimits::default()).await.unwrap();
    let error = host.language("workflow/v1").unwrap().guide("core").await.unwrap_err();
    assert_eq!(error, HostError::TooLarge { what: "the guide core".into(), limit: 1024 * 1024 });
    let small = HostLimits { max_response_bytes: 64 * 1024, ..HostLimits::default() };
    let host = connect(&server, small).await.unwrap();
    let error = host.language("workflow/v1").unwrap().guide("core").await.unwrap_err();
    assert_eq!(error, HostError::TooLarge { what: "the answer to tools/call".into(), limit: 64 * 1024 });

    let tiny_traces = HostLimits { max_trace_bytes: 16, ..HostLimits::default() };
    let host = connect(&Wrapped::workflow(none()), tiny_traces).await.unwrap();
    let options = ExecuteOptions { input: Some(user_42()), ..ExecuteOptions::default() };
    let error =
        host.language("workflow/v1").unwrap().run(workflow_call("cap_read_user_profile"), &options).await;
    assert_eq!(
        error.unwrap_err(),
        HostError::TooLarge { what: "the trace of run_workflow".into(), limit: 16 }
    );
}

#[tokio::test]
async fn a_server_that_never_answers_costs_bounded_time() {
    let server = Wrapped::workflow(replacing("run_workflow", || Some(Reply::Hang)));
    let limits = HostLimits { execute_timeout: Duration::from_millis(300), ..HostLimits::default() };
    let host = connect(&server, limits).await.unwrap();
    let wf = host.language("workflow/v1").unwrap();
    let verdict = wf.validate(workflow_call("cap_read_user_profile")).await.unwrap();
    let options = ExecuteOptions { input: Some(user_42()), ..ExecuteOptions::default() };
    let started = Instant::now();
    let error = wf.execute(&verdict, &options).await.unwrap_err();
    assert_eq!(error, HostError::Timeout { what: "run_workflow".into(), after: Duration::from_millis(300) });
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(server.count("run_workflow"), 1, "a Run that may have started is not sent again");

    // A child process that never speaks MCP: the handshake times out.
    let limits = HostLimits { connect_timeout: Duration::from_millis(300), ..HostLimits::default() };
    let started = Instant::now();
    let error = Host::stdio("sleep 30").limits(limits).connect().await.err().expect("no handshake");
    assert_eq!(error, HostError::Timeout { what: "connecting".into(), after: Duration::from_millis(300) });
    assert!(started.elapsed() < Duration::from_secs(5));
    // A command that does not exist is a transport error.
    let error = Host::stdio("/nonexistent/pilotage-server").connect().await.err().expect("no such file");
    assert!(matches!(error, HostError::Transport(_)), "{error:?}");
}
