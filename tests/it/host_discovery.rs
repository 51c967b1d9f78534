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

/// Part III §3.3 over sessionful Streamable HTTP: an rmcp server sends `tools/list_changed`
/// only on the session's standalone GET stream (never inside an answer's stream); the Host
/// listens there, so the next request rediscovers. Without the stream it would not, for
/// `HostLimits::rediscover_after` (60 s).
#[tokio::test]
async fn a_sessionful_http_host_hears_list_changed_on_the_get_stream() {
    let announce = Arc::new(Mutex::new(false));
    let a = announce.clone();
    let replace = Arc::new(move |tool: &str, _: &Value| match tool {
        "validate_workflow" if *a.lock().unwrap() => Some(Reply::ListChanged),
        _ => None,
    });
    let server = Wrapped::workflow(replace);
    let (url, task) = server.serve().await;
    let host = Host::http(&url).connect().await.unwrap();
    let wf = host.language("workflow/v1").unwrap();
    wf.validate(workflow_call("cap_read_user_profile")).await.unwrap();
    assert_eq!(server.count("pilotage_manifest"), 1, "nothing changed: no rediscovery");

    *announce.lock().unwrap() = true;
    wf.validate(workflow_call("cap_read_user_profile")).await.unwrap();
    *announce.lock().unwrap() = false;
    tokio::time::sleep(Duration::from_millis(300)).await;
    wf.validate(workflow_call("cap_read_user_profile")).await.unwrap();
    assert_eq!(
        server.count("pilotage_manifest"),
        2,
        "the change heard on the GET stream makes the next request rediscover"
    );
    wf.validate(workflow_call("cap_read_user_profile")).await.unwrap();
    assert_eq!(server.count("pilotage_manifest"), 2, "once");
    task.abort();
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

/// A stateless endpoint answering `check_tiny` as an SSE stream that carries
/// `notifications/tools/list_changed` before the response, when `announce` is set.
async fn announcing_endpoint(
    State((seen, announce)): State<(Seen, Arc<Mutex<bool>>)>,
    headers: HeaderMap,
    body: String,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let request: Value = serde_json::from_str(&body).unwrap();
    let sse = request["params"]["name"] == "check_tiny" && *announce.lock().unwrap();
    let axum::Json(answer) = stateless_endpoint(State(seen), headers, body).await;
    if !sse {
        return axum::Json(answer).into_response();
    }
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    let stream = format!("event: message\ndata: {notification}\n\nevent: message\ndata: {answer}\n\n");
    ([("content-type", "text/event-stream")], stream).into_response()
}

/// Part III §3.3 on the stateless revision: a `tools/list_changed` the server puts in the SSE
/// answer to a request is honoured (the next request rediscovers); the manifest's age alone
/// does not trigger it here (the default 60 s bound).
#[tokio::test]
async fn a_stateless_host_rediscovers_after_a_list_changed_in_an_answer_stream() {
    let seen: Seen = Arc::default();
    let announce = Arc::new(Mutex::new(false));
    let app = axum::Router::new()
        .route("/mcp", axum::routing::post(announcing_endpoint))
        .with_state((seen.clone(), announce.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let host = Host::http(&url).stateless().approver(Recording::denying()).connect().await.unwrap();
    let tiny = host.language("tiny/v1").unwrap();
    let manifests =
        || seen.lock().unwrap().iter().filter(|(r, _)| r["params"]["name"] == "pilotage_manifest").count();
    assert!(tiny.validate(json!({})).await.unwrap().valid());
    assert_eq!(manifests(), 1, "fresh: no rediscovery");
    *announce.lock().unwrap() = true;
    assert!(tiny.validate(json!({})).await.unwrap().valid(), "the response after the notification is read");
    *announce.lock().unwrap() = false;
    assert_eq!(manifests(), 1);
    assert!(tiny.validate(json!({})).await.unwrap().valid());
    assert_eq!(manifests(), 2, "the announced change makes the next request rediscover");
    task.abort();
}

/// The other §3.3 triggers: an `unknown_baseline` request error and a `catalog_drift` outcome
/// make the next request rediscover (here through exact calls, the path the conformance
/// runner takes; the loop's own calls share it).
#[tokio::test]
async fn unknown_baseline_and_catalog_drift_make_the_host_rediscover() {
    let replace = Arc::new(|tool: &str, args: &Value| match tool {
        "pilotage_catalog" if args.get("changed_since").is_some() => Some(Reply::Result(json!({
            "content": [{"type": "text", "text": "unknown baseline"}],
            "structuredContent": {"error": {"kind": "unknown_baseline", "message": "no such baseline"}}, "isError": true
        }))),
        "run_workflow" => Some(Reply::Result(json!({
            "content": [{"type": "text", "text": "drift"}],
            "structuredContent": {"run_id": "r", "outcome": {"ok": false, "status": "catalog_drift", "error": "moved"}}
        }))),
        _ => None,
    });
    let server = Wrapped::workflow(replace);
    let host = server.host_over_pipes().await;
    let object = |v: Value| v.as_object().cloned().unwrap();
    let list = object(json!({"language": "workflow/v1", "verb": "list"}));
    host.call_tool("pilotage_catalog", list.clone()).await.unwrap();
    assert_eq!(server.count("pilotage_manifest"), 1);
    let stale_baseline = object(json!({"language": "workflow/v1", "verb": "list", "changed_since": "cv_0"}));
    let answer = host.call_tool("pilotage_catalog", stale_baseline).await.unwrap();
    assert_eq!(answer.request_failure().unwrap().kind, pilotage::model::errors::ErrorKind::UnknownBaseline);
    host.call_tool("pilotage_catalog", list.clone()).await.unwrap();
    assert_eq!(server.count("pilotage_manifest"), 2, "unknown_baseline makes the next request rediscover");
    let run = object(json!({"workflow": workflow_call("cap_read_user_profile"), "trace_level": "summary"}));
    let drifted = host.call_tool("run_workflow", run).await.unwrap();
    assert_eq!(drifted.structured.unwrap()["outcome"]["status"], "catalog_drift");
    host.call_tool("pilotage_catalog", list).await.unwrap();
    assert_eq!(server.count("pilotage_manifest"), 3, "catalog_drift makes the next request rediscover");
}

/// A TCP relay on 127.0.0.1 in front of `url`'s server that counts the connections it accepts;
/// its URL, the count and the task.
async fn counting_relay(
    url: &str,
) -> (String, Arc<std::sync::atomic::AtomicUsize>, tokio::task::JoinHandle<()>) {
    let upstream = url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let relayed = format!("http://{}/mcp", listener.local_addr().unwrap());
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = count.clone();
    let task = tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let upstream = upstream.clone();
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(&upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (relayed, count, task)
}

/// Over plain `http://` each request has a connection of its own (a reused one would wait up to
/// 40 ms per answer on a server that leaves Nagle's algorithm on); `reuse_connections(true)`
/// keeps one for the requests beside the session's GET stream.
#[tokio::test]
async fn plain_http_opens_a_connection_per_request_unless_told_to_reuse() {
    let server = Wrapped::workflow(none());
    let (url, task) = server.serve().await;
    for reuse in [None, Some(true)] {
        let (relayed, count, relay) = counting_relay(&url).await;
        let connect = Host::http(&relayed);
        let host = match reuse {
            Some(yes) => connect.reuse_connections(yes),
            None => connect,
        }
        .connect()
        .await
        .unwrap();
        let wf = host.language("workflow/v1").unwrap();
        let before = count.load(std::sync::atomic::Ordering::SeqCst);
        for _ in 0..10 {
            wf.validate(workflow_call("cap_read_user_profile")).await.unwrap();
            // The rest of each answer's stream is read in the background before its
            // connection may be reused.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let opened = count.load(std::sync::atomic::Ordering::SeqCst) - before;
        match reuse {
            None => assert_eq!(opened, 10, "a connection per validate"),
            _ => assert_eq!(opened, 0, "the validates reuse the discovery's connection"),
        }
        drop(host);
        relay.abort();
    }
    task.abort();
}
