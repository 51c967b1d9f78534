//! Idempotency (Part II §6.5.6, `execute.idempotency`) on `automation/v1`: a replay returns
//! the recorded response of the first Run byte for byte and the program runs once, also when
//! the duplicates arrive concurrently; a reused key with another runnable or input is
//! `idempotency_conflict`; refused Runs are never recorded.

use crate::{kit, support};

use kit::{assert_request_error, ctx, Client, TempStore, ARG, EXECUTE};
use serde_json::{json, Value};
use support::{HttpServer, HttpStyle};

fn server(store: &TempStore) -> pilotage::Server {
    kit::server_on(store.path(), None)
}

fn add(by_input: bool) -> Value {
    let by = if by_input { json!("$.input.by") } else { json!(1) };
    let mut p = json!({
        "steps": [{"id": "add", "call": "counter_add", "with": {"by": by}}],
        "output": {"counter": "$.steps.add.output.counter"}
    });
    if by_input {
        p["inputs"] = json!({"by": "integer"});
    }
    p
}

fn args(program: &Value, version: &str, key: &str, extra: Value) -> Value {
    let mut a = json!({ARG: program, "mode": "immediate", "context": ctx(), "expected_catalog_version": version, "idempotency_key": key});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        a[k] = v;
    }
    a
}

#[tokio::test]
async fn a_replay_returns_the_first_response_and_runs_once() {
    let store = TempStore::new("idem");
    let mut c = Client::duplex(&server(&store)).await;
    let program = add(false);
    let (plan, version) = c.plan(&program).await;
    let first = c.execute_with(&plan, args(&program, &version, "k-1", json!({}))).await;
    assert_eq!(first.structured["outcome"]["status"], "success");
    assert_eq!(first.structured["output"], json!({"counter": 1}));
    let second = c.execute_with(&plan, args(&program, &version, "k-1", json!({}))).await;
    assert_eq!(
        second.raw["result"], first.raw["result"],
        "the replay is the recorded response, byte for byte"
    );
    assert_eq!(second.structured["run_id"], first.structured["run_id"]);
    assert_eq!(c.fingerprint().await["counter"], 1, "the program ran once");
    // Another key is another run.
    let other = c.execute_with(&plan, args(&program, &version, "k-2", json!({}))).await;
    assert_ne!(other.structured["run_id"], first.structured["run_id"]);
    assert_eq!(other.structured["output"], json!({"counter": 2}));

    // Deploy: the replay returns the same installation; one rule is installed.
    let rule = json!({"trigger": {"event": "motion"}, "steps": [{"id": "add", "call": "counter_add", "with": {"by": 1}}]});
    let (rule_plan, version) = c.plan(&rule).await;
    let deploy = |key: &str| json!({ARG: rule, "mode": "deploy", "context": ctx(), "expected_catalog_version": version, "idempotency_key": key});
    let installed = c.execute_with(&rule_plan, deploy("k-rule")).await;
    let replayed = c.execute_with(&rule_plan, deploy("k-rule")).await;
    assert_eq!(replayed.raw["result"], installed.raw["result"]);
    assert_eq!(installed.structured["output"], json!({"rule_id": "rule_1", "event": "motion"}));
    assert_eq!(c.fingerprint().await["rules"], json!(["rule_1"]));
}

#[tokio::test]
async fn a_reused_key_with_another_runnable_or_input_is_a_conflict() {
    let store = TempStore::new("idem");
    let mut c = Client::duplex(&server(&store)).await;
    let program = add(true);
    let (plan, version) = c.plan(&program).await;
    let first = c.execute_with(&plan, args(&program, &version, "k", json!({"input": {"by": 2}}))).await;
    assert_eq!(first.structured["outcome"]["status"], "success");
    let other_input = c.execute_with(&plan, args(&program, &version, "k", json!({"input": {"by": 3}}))).await;
    assert_request_error(&other_input, "idempotency_conflict");
    assert_eq!(
        other_input.structured["error"]["message"],
        "this idempotency_key was used with a different runnable or input, or a different mode: use a fresh key"
    );
    let other_program = add(false);
    let (plan2, version2) = c.plan(&other_program).await;
    let other_runnable = c.execute_with(&plan2, args(&other_program, &version2, "k", json!({}))).await;
    assert_request_error(&other_runnable, "idempotency_conflict");
    assert_eq!(c.fingerprint().await["counter"], 2, "conflicting requests ran nothing");
    // The same runnable and input still replay.
    let replay = c.execute_with(&plan, args(&program, &version, "k", json!({"input": {"by": 2}}))).await;
    assert_eq!(replay.raw["result"], first.raw["result"]);
}

#[tokio::test]
async fn refused_runs_are_not_recorded() {
    let store = TempStore::new("idem");
    let mut c = Client::duplex(&server(&store)).await;
    let program = add(true);
    let (plan, version) = c.plan(&program).await;

    // Refused for catalog drift: not recorded, so the unchanged retry with the current token
    // executes (it is not a replay of the refusal).
    c.conn.call_ok("catalog_update_entry", json!({"id": "wait", "description": "Pauses."})).await;
    let drift = c.execute_with(&plan, args(&program, &version, "k-drift", json!({"input": {"by": 1}}))).await;
    assert_eq!(drift.structured["outcome"]["status"], "catalog_drift");
    let (plan, version) = c.plan(&program).await;
    let retry = c.execute_with(&plan, args(&program, &version, "k-drift", json!({"input": {"by": 1}}))).await;
    assert_eq!(retry.structured["outcome"]["status"], "success", "{}", retry.raw);
    assert_ne!(retry.structured["run_id"], drift.structured["run_id"]);
    assert_eq!(c.fingerprint().await["counter"], 1);

    // Refused for its input: not recorded, so the corrected request with the same key is no
    // conflict and executes.
    let bad =
        c.execute_with(&plan, args(&program, &version, "k-input", json!({"input": {"by": "one"}}))).await;
    assert_eq!(bad.structured["outcome"]["status"], "validation_error");
    assert_eq!(bad.structured["diagnostics"][0]["path"], "/by");
    let fixed = c.execute_with(&plan, args(&program, &version, "k-input", json!({"input": {"by": 4}}))).await;
    assert_eq!(fixed.structured["outcome"]["status"], "success", "{}", fixed.raw);
    assert_eq!(c.fingerprint().await["counter"], 5);
    // A started run that failed is recorded: its retry is a replay.
    c.conn.call_ok("inject_fault", json!({"lockdown": true})).await;
    let door = json!({"steps": [{"id": "open", "call": "door_unlock", "with": {"device": "front_door"}}]});
    let (door_plan, version) = c.plan(&door).await;
    let denied = c.execute_with(&door_plan, args(&door, &version, "k-door", json!({}))).await;
    assert_eq!(denied.structured["outcome"]["status"], "denied");
    c.conn.call_ok("inject_fault", json!({"lockdown": false})).await;
    let again = c.execute_with(&door_plan, args(&door, &version, "k-door", json!({}))).await;
    assert_eq!(again.raw["result"], denied.raw["result"]);
}

async fn post(client: &reqwest::Client, url: &str, session: &str, body: &Value) -> Value {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", support::PROTOCOL)
        .body(body.to_string())
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status().as_u16(), 200);
    response.json().await.expect("a JSON body")
}

/// Duplicates sent at the same time on one MCP session: the program runs once and all get
/// the first Run's response. (A control pair with distinct keys shows that the server does
/// run requests of one session concurrently, so the duplicates really overlapped.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_duplicates_execute_once() {
    let store = TempStore::new("idem");
    let http = HttpServer::start(&server(&store)).await;
    let mut c = Client::new(http.connect(HttpStyle::Plain)).await;
    let session = c.conn.session_id().unwrap().to_owned();
    let program = json!({
        "steps": [
            {"id": "slow", "call": "wait", "with": {"ms": 500}},
            {"id": "add", "call": "counter_add", "with": {"by": 1}}
        ],
        "output": {"counter": "$.steps.add.output.counter"}
    });
    let (plan, version) = c.plan(&program).await;
    let call = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": EXECUTE, "arguments": args(&program, &version, "k-concurrent", json!({}))}})
    };
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let (m1, m2, m3) = (call(101), call(102), call(103));
    let (a, b, d) = tokio::join!(
        post(&client, http.url(), &session, &m1),
        post(&client, http.url(), &session, &m2),
        post(&client, http.url(), &session, &m3),
    );
    for r in [&a, &b, &d] {
        assert_eq!(r["result"]["isError"], false, "{r}");
        kit::check_run(&plan, &r["result"]["structuredContent"], false);
    }
    assert_eq!(a["result"], b["result"], "both duplicates get the first Run's response");
    assert_eq!(a["result"], d["result"]);
    assert_eq!(a["result"]["structuredContent"]["output"], json!({"counter": 1}));
    assert_eq!(c.fingerprint().await["counter"], 1, "three concurrent duplicates ran the program once");

    let control = |id: u64, key: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": EXECUTE, "arguments": args(&program, &version, key, json!({}))}})
    };
    let (m1, m2) = (control(201, "k-a"), control(202, "k-b"));
    let started = std::time::Instant::now();
    let (a, b) =
        tokio::join!(post(&client, http.url(), &session, &m1), post(&client, http.url(), &session, &m2));
    let elapsed = started.elapsed();
    assert_ne!(a["result"]["structuredContent"]["run_id"], b["result"]["structuredContent"]["run_id"]);
    assert_eq!(c.fingerprint().await["counter"], 3);
    assert!(elapsed < std::time::Duration::from_millis(950), "two 500 ms runs overlapped: {elapsed:?}");
}

/// A test run has no effects to protect, so it neither claims nor replays an idempotency key:
/// the real run with the same key executes.
#[tokio::test]
async fn a_test_run_does_not_consume_the_key_of_the_real_run() {
    let store = TempStore::new("idem");
    let mut c = Client::duplex(&server(&store)).await;
    let program = add(false);
    let (plan, version) = c.plan(&program).await;
    let tried = c.execute_with(&plan, args(&program, &version, "k", json!({"test_run": true}))).await;
    assert_eq!(tried.structured["outcome"]["status"], "success");
    let real = c.execute_with(&plan, args(&program, &version, "k", json!({}))).await;
    assert_ne!(real.structured["run_id"], tried.structured["run_id"]);
    assert_eq!(c.fingerprint().await["counter"], 1, "the real run executed");
}
