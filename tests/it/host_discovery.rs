//! Discovery and freshness (Part III §1.2, §3, §10.2 items 1-3): the Host declares the
//! extension on `initialize` and, stateless, in every request's `_meta`; it rediscovers (asks
//! `pilotage_manifest` again) after `notifications/tools/list_changed`, after a `not_found`,
//! and, stateless, when its manifest is older than `HostLimits::rediscover_after`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use pilotage::host::{Host, HostLimits};
use serde_json::{json, Value};

use crate::host_kit::{none, workflow_call, Recording, Reply, Wrapped};
use crate::support::EXT;

#[tokio::test]
async fn the_extension_is_declared_on_initialize() {
    let server = Wrapped::workflow(none());
    let (url, task) = server.serve().await;
    Host::http(&url).connect().await.unwrap();
    server.host_over_pipes().await;
    let inits = server.inits.lock().unwrap().clone();
    assert_eq!(inits.len(), 2);
    for capabilities in inits {
        assert_eq!(capabilities["extensions"], json!({EXT: {}}), "{capabilities}");
    }
    task.abort();
}

#[tokio::test]
async fn list_changed_and_not_found_make_the_host_rediscover() {
    let announce = Arc::new(Mutex::new(false));
    let not_found = Arc::new(Mutex::new(false));
    let (a, n) = (announce.clone(), not_found.clone());
    let replace = Arc::new(move |tool: &str, _: &Value| match tool {
        "validate_workflow" if *a.lock().unwrap() => Some(Reply::ListChanged),
        "pilotage_get_guide" if *n.lock().unwrap() => Some(Reply::Result(json!({
            "content": [{"type": "text", "text": "gone"}],
            "structuredContent": {"error": {"kind": "not_found", "message": "gone"}}, "isError": true
        }))),
        _ => None,
    });
    let server = Wrapped::workflow(replace);
    let host = server.host_over_pipes().await;
    let wf = host.language("workflow/v1").unwrap();
    assert_eq!(server.count("pilotage_manifest"), 1);
    wf.validate(workflow_call("cap_read_user_profile")).await.unwrap();
    assert_eq!(server.count("pilotage_manifest"), 1, "nothing changed: no rediscovery");

    // The server announces a tool-list change while answering a validation.
    *announce.lock().unwrap() = true;
    wf.validate(workflow_call("cap_read_user_profile")).await.unwrap();
    *announce.lock().unwrap() = false;
    tokio::time::sleep(Duration::from_millis(200)).await;
    wf.validate(workflow_call("cap_read_user_profile")).await.unwrap();
    assert_eq!(server.count("pilotage_manifest"), 2, "list_changed makes the next request rediscover");

    // A not_found for a name the Host believed current.
    *not_found.lock().unwrap() = true;
    assert!(wf.guides().await.is_err());
    *not_found.lock().unwrap() = false;
    wf.validate(workflow_call("cap_read_user_profile")).await.unwrap();
    assert_eq!(server.count("pilotage_manifest"), 3, "a not_found makes the next request rediscover");
}

/// What a stateless test endpoint saw: each request's body and `MCP-Protocol-Version`.
type Seen = Arc<Mutex<Vec<(Value, String)>>>;

const MANIFEST: &str = r#"{"pilotage": "1.1", "languages": [{"name": "tiny/v1", "title": "t", "guides": "pilotage_get_guide",
    "loop": {"validate": "check_tiny"}, "capabilities": {"guides": true, "validate": true, "plan": true},
    "locator": "json-pointer"}]}"#;

async fn stateless_endpoint(State(seen): State<Seen>, headers: HeaderMap, body: String) -> axum::Json<Value> {
    let request: Value = serde_json::from_str(&body).unwrap();
    let version = headers.get("mcp-protocol-version").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    seen.lock().unwrap().push((request.clone(), version));
    let manifest: Value = serde_json::from_str(MANIFEST).unwrap();
    let tool_result = |structured: Value| json!({"content": [{"type": "text", "text": "x"}], "structuredContent": structured});
    let result = match (request["method"].as_str(), request["params"]["name"].as_str()) {
        (Some("server/discover"), _) => json!({"supportedVersions": ["2026-07-28"], "capabilities": {}}),
        (Some("tools/list"), _) => json!({"tools": [
            {"name": "pilotage_manifest", "inputSchema": {"type": "object"}},
            {"name": "check_tiny", "inputSchema": {"type": "object", "properties": {"doc": {}}},
             "_meta": {EXT: {"argument": "doc", "language": "tiny/v1"}}}
        ]}),
        (_, Some("pilotage_manifest")) => tool_result(manifest),
        (_, Some("check_tiny")) => tool_result(json!({"valid": true, "diagnostics": [],
            "plan": {"steps": [], "max_risk": "safe", "max_risk_hints": {"readOnly": true, "destructive": false, "openWorld": false}}})),
        _ => json!({}),
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
}

#[tokio::test]
async fn stateless_requests_carry_the_capabilities_and_rediscover_when_old() {
    let seen: Seen = Arc::default();
    let app =
        axum::Router::new().route("/mcp", axum::routing::post(stateless_endpoint)).with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let limits = HostLimits { rediscover_after: Duration::ZERO, ..HostLimits::default() };
    let host =
        Host::http(&url).stateless().limits(limits).approver(Recording::denying()).connect().await.unwrap();
    let tiny = host.language("tiny/v1").unwrap();
    for _ in 0..2 {
        let verdict = tiny.validate(json!({"anything": 1})).await.unwrap();
        assert!(verdict.valid());
    }
    let seen = seen.lock().unwrap().clone();
    let methods: Vec<String> = seen
        .iter()
        .map(|(r, _)| {
            format!("{} {}", r["method"].as_str().unwrap(), r["params"]["name"].as_str().unwrap_or(""))
        })
        .collect();
    // Discovery, then before each validate a rediscovery (the manifest is always "old").
    let (list, manifest, check) = ("tools/list ", "tools/call pilotage_manifest", "tools/call check_tiny");
    let expected = ["server/discover ", list, manifest, list, manifest, check, list, manifest, check];
    assert_eq!(methods, expected);
    for (request, version) in &seen {
        assert_eq!(version, "2026-07-28");
        let meta = &request["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"]["extensions"],
            json!({EXT: {}}),
            "{request}"
        );
        assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
    }
    task.abort();
}
