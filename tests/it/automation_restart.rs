//! Retention that keeps its word (Part II §6.6, ISO 8601 duration): `automation/v1` declares
//! retention `PT1H`, so a Run executed with `store: true` is committed to the SQLite run store
//! before the execute response is sent, and the same envelope is fetched after the server
//! process is killed and started again on the same store file.

use crate::{automation, kit, support};

use std::time::Duration;

use kit::{ctx, Client, TempStore, ARG, EXECUTE, TRACE};
use serde_json::{json, Value};
use support::{free_port, Conn, Served};

fn program() -> Value {
    json!({
        "steps": [
            {"id": "lights", "call": "devices_list", "with": {"kind": "light"}},
            {"id": "each", "loop": "$.steps.lights.output.devices", "as": "l", "steps": [
                {"id": "on", "call": "light_set", "with": {"device": "$.vars.l.device", "on": true, "level": 40}}
            ]},
            {"id": "count", "call": "counter_add", "with": {"by": 3}}
        ],
        "output": {"counter": "$.steps.count.output.counter"}
    })
}

/// The automation binary serving stateless Streamable HTTP on `port` over `store`, verifying
/// callers with the test secret (written next to the store).
async fn start(port: u16, store: &TempStore) -> Served {
    Served::start(
        port,
        &["--store".as_ref(), store.path().as_os_str()],
        &store.path().with_extension("secret"),
    )
    .await
}

/// One stateless `tools/call` as the verified caller `who` (a fresh token for its `sub`);
/// returns the JSON-RPC `result`.
async fn call(port: u16, who: &str, name: &str, arguments: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    let response = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!("http://127.0.0.1:{port}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", support::PROTOCOL)
        .header("authorization", support::auth::bearer(who))
        .body(body.to_string())
        .send()
        .await
        .expect("POST");
    let status = response.status();
    let text = response.text().await.unwrap();
    let json: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("HTTP {status}: not JSON ({e}): {text}"));
    json.get("result").cloned().unwrap_or_else(|| panic!("no result: {json}"))
}

/// Kill the server process between execute and fetch: the stored envelope comes back
/// identical, to the same verified caller only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_run_survives_a_server_restart() {
    let store = TempStore::new("restart");
    let port = free_port();
    let mut server = start(port, &store).await;
    let validated = call(port, "alice", kit::VALIDATE, json!({ARG: program(), "context": ctx()})).await;
    let plan = kit::plan_of(&validated["structuredContent"]);
    let executed = call(
        port,
        "alice",
        EXECUTE,
        json!({ARG: program(), "mode": "immediate", "context": ctx(), "store": true,
               "expected_catalog_version": validated["structuredContent"]["catalog_version"]}),
    )
    .await;
    let response = executed["structuredContent"].clone();
    kit::check_run(&plan, &response, false);
    assert_eq!(response["outcome"]["status"], "success", "{response}");
    assert_eq!(response["output"], json!({"counter": 3}));
    let run_id = response["run_id"].as_str().unwrap().to_owned();
    let before = call(port, "alice", TRACE, json!({"run_id": run_id})).await;
    server.kill9().await;

    let mut server = start(port, &store).await;
    let fetched = call(port, "alice", TRACE, json!({"run_id": run_id})).await;
    assert_eq!(fetched["isError"], false, "{fetched}");
    let mut envelope = fetched["structuredContent"].clone();
    envelope.as_object_mut().unwrap().remove("narration");
    assert_eq!(envelope, response, "the envelope after the restart is the one the execute response carried");
    assert_eq!(fetched, before, "the fetch result is the same before and after the restart");
    // Another verified caller cannot tell the run from an unknown one.
    let foreign = call(port, "mallory", TRACE, json!({"run_id": run_id})).await;
    let unknown = call(port, "mallory", TRACE, json!({"run_id": "run_0000000000000000"})).await;
    assert_eq!(foreign["isError"], true);
    assert_eq!(foreign, unknown);
    server.kill9().await;
}

/// A duration retention is a durability promise: the server refuses to build without a
/// durable run store.
#[test]
fn a_duration_retention_needs_a_durable_store() {
    let refused =
        pilotage::Server::builder().language(automation::Automation::new).build().err().expect("refused");
    assert_eq!(
        refused.problems,
        ["Language automation/v1: retention PT1H promises durability across restarts; configure a durable store with ServerBuilder::state (SqliteState with the feature `sqlite`, or PostgresState with the feature `postgres` for several replicas)"]
    );
    let in_memory = pilotage::state::SqliteState::in_memory().unwrap();
    let refused = pilotage::Server::builder()
        .language(automation::Automation::new)
        .state(std::sync::Arc::new(in_memory))
        .build()
        .err()
        .expect("an in-memory store is not durable");
    assert_eq!(refused.problems.len(), 1);
    let store = TempStore::new("restart-build");
    assert!(pilotage::Server::builder()
        .language(automation::Automation::new)
        .state(std::sync::Arc::new(pilotage::state::SqliteState::open(store.path()).unwrap()))
        .build()
        .is_ok());
}

/// RUNTIME BUG (reported): a Run stored over stdio cannot be fetched after the process
/// restarts, although retention `PT1H` promises it: the record's owner is the per-session
/// caller `session-<uuid>` (pilotage-runtime/src/server/mod.rs `Shared::new_session`), minted anew
/// for every MCP session, while Part III §8.4 binds stdio authority to the deployment's ambient
/// identity. The fetch after the restart answers `not_found`.
#[tokio::test]
async fn a_stored_run_survives_a_stdio_restart() {
    let store = TempStore::new("restart-stdio");
    let path = store.path().to_str().unwrap().to_owned();
    let mut first = Client::new(Conn::stdio("automation", &["--store", &path])).await;
    let response = first.run(&program(), "immediate", json!({"store": true})).await;
    assert_eq!(response["outcome"]["status"], "success");
    drop(first);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut second = Client::new(Conn::stdio("automation", &["--store", &path])).await;
    let fetched = second.fetch(json!({"run_id": response["run_id"]})).await;
    assert!(!fetched.is_error, "{}", fetched.raw);
    let mut envelope = fetched.structured.clone();
    envelope.as_object_mut().unwrap().remove("narration");
    assert_eq!(envelope, response);
}

/// RUNTIME BUG (reported): the idempotency table lives in memory
/// (pilotage-runtime/src/state/idempotency.rs, one per `Server`), so a restart forgets every key,
/// while Part II §6.5.6 requires a deduplication window at least as long as the declared
/// retention (`PT1H`, which survives restarts). The retry after a restart executes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_survives_a_server_restart() {
    let store = TempStore::new("restart-idem");
    let port = free_port();
    let args = json!({ARG: program(), "mode": "immediate", "context": ctx(), "idempotency_key": "k-restart"});
    let mut server = start(port, &store).await;
    let first = call(port, "alice", EXECUTE, args.clone()).await;
    server.kill9().await;
    let mut server = start(port, &store).await;
    let retry = call(port, "alice", EXECUTE, args).await;
    server.kill9().await;
    assert_eq!(retry, first, "the retry within the retention period replays the first run");
}
