//! Long runs (beyond Pilotage 1.1, opt-in by the client): progress notifications for an execute
//! that carries a `progressToken`, and `notifications/cancelled` stopping a Run, which then ends
//! `partial` with the trace it has and is fetchable like any other Run. Over duplex and the
//! example binary over stdio, on the `automation/v1` engine.

use crate::{kit, support};

use kit::{ctx, ids, Client, TempStore, ARG, EXECUTE, TRACE};
use pilotage::engine::progress::max_ticks;
use serde_json::{json, Value};
use support::{Conn, EXT};

/// A flat program of `n` steps, each a `wait` of `ms` milliseconds.
pub fn waits(n: usize, ms: u64) -> Value {
    let steps: Vec<Value> =
        (0..n).map(|i| json!({"id": format!("s{i}"), "call": "wait", "with": {"ms": ms}})).collect();
    json!({"steps": steps})
}

/// A program that loops over `n` items, waiting `ms` milliseconds in each.
pub fn slow_loop(n: usize, ms: u64) -> Value {
    let items: Vec<usize> = (0..n).collect();
    json!({"steps": [{"id": "each", "loop": items, "as": "i", "steps": [
        {"id": "pause", "call": "wait", "with": {"ms": ms}}
    ]}]})
}

/// The execute arguments of an immediate run of `program`.
fn run_args(program: &Value) -> Value {
    json!({ARG: program, "mode": "immediate", "context": ctx()})
}

/// The `notifications/progress` messages for `token` among `messages`.
fn progress_of(messages: &[Value], token: &str) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == token)
        .map(|m| m["params"].clone())
        .collect()
}

async fn progress_run(conn: &mut Conn) {
    let program = waits(10_000, 0);
    let id = conn
        .start(
            "tools/call",
            json!({"name": EXECUTE, "arguments": run_args(&program), "_meta": {"progressToken": "p1"}}),
        )
        .await;
    let response = conn.finish(id).await;
    let result = &response["result"]["structuredContent"];
    assert_eq!(result["outcome"]["status"], "success", "{}: {response:#}", conn.label);
    conn.check_tool_result(EXECUTE, &response["result"]).await;
    let ticks = progress_of(conn.unsolicited(), "p1");
    // Deterministic: every power of two and the first step of each 32nd of the plan.
    assert_eq!(ticks.len(), 46, "{}: {ticks:?}", conn.label);
    assert!(ticks.len() <= max_ticks(10_000));
    let run = json!({EXT: {"run_id": result["run_id"]}});
    assert_eq!(
        ticks[0],
        json!({"progressToken": "p1", "progress": 1.0, "total": 10000.0, "message": "s0", "_meta": run})
    );
    assert_eq!(
        ticks[45],
        json!({"progressToken": "p1", "progress": 10000.0, "total": 10000.0, "message": "s9999", "_meta": run})
    );
    let done: Vec<f64> = ticks.iter().map(|t| t["progress"].as_f64().unwrap()).collect();
    assert!(done.windows(2).all(|w| w[0] < w[1]), "progress must increase: {done:?}");
    // Without a token, the same run sends none.
    let before = conn.unsolicited().len();
    let plain = conn.call(EXECUTE, run_args(&waits(50, 0))).await;
    assert_eq!(plain.structured["outcome"]["status"], "success");
    let after: Vec<&Value> =
        conn.unsolicited()[before..].iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert!(after.is_empty(), "{}: progress without a token: {after:?}", conn.label);
}

#[tokio::test]
async fn progress_is_bounded_over_duplex() {
    let store = TempStore::new("long-progress");
    let mut c = Client::duplex(&kit::server_on(store.path(), None)).await;
    progress_run(&mut c.conn).await;
}

#[tokio::test]
async fn progress_is_bounded_over_stdio() {
    let dir = TempStore::new("long-progress-stdio");
    let mut c = Client::new(Conn::stdio("automation", &["--store", dir.path().to_str().unwrap()])).await;
    progress_run(&mut c.conn).await;
}

/// Start a 40 × 100 ms loop with a progress token, cancel it once its first step is reported,
/// and check the Run: no answer to the cancelled request (MCP), and, fetched by the `run_id` its
/// progress named, `partial` with a strict prefix of the full trace.
async fn cancelled_run(conn: &mut Conn) {
    let program = slow_loop(40, 100);
    let id = conn
        .start(
            "tools/call",
            json!({"name": EXECUTE, "arguments": run_args(&program), "_meta": {"progressToken": "c1"}}),
        )
        .await;
    let first = conn
        .message_where(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == "c1")
        .await;
    let run_id = first["params"]["_meta"][EXT]["run_id"].as_str().expect("the run id in _meta").to_owned();
    conn.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "the operator changed their mind"}),
    )
    .await;
    let fetched = fetch_when_kept(conn, &run_id).await;
    assert_eq!(fetched["outcome"]["ok"], false, "{}: {fetched:#}", conn.label);
    assert_eq!(fetched["outcome"]["status"], "partial", "{}: {fetched:#}", conn.label);
    let error = fetched["outcome"]["error"].as_str().unwrap();
    assert!(error.starts_with("the client cancelled the run after "), "{error}");
    let steps = fetched["trace"]["steps"].as_array().unwrap();
    assert!(!steps.is_empty() && steps.len() < 41, "{}: a cancelled run stops early: {steps:?}", conn.label);
    assert!(
        !conn.unsolicited().iter().any(|m| m["id"] == json!(id)),
        "{}: a cancelled request is not answered",
        conn.label
    );
}

/// The trace tool's answer for `run_id` once the Run is retained (a cancelled run is kept
/// when its engine has stopped, a moment after the cancellation).
pub async fn fetch_when_kept(conn: &mut Conn, run_id: &str) -> Value {
    for _ in 0..200 {
        let call = conn.call(TRACE, json!({"run_id": run_id})).await;
        if !call.is_error {
            return call.structured;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("{}: run {run_id} was never retained", conn.label);
}

#[tokio::test]
async fn cancellation_stops_the_run_over_duplex() {
    let store = TempStore::new("long-cancel");
    let mut c = Client::duplex(&kit::server_on(store.path(), None)).await;
    cancelled_run(&mut c.conn).await;
}

#[tokio::test]
async fn cancellation_stops_the_run_over_stdio() {
    let dir = TempStore::new("long-cancel-stdio");
    let mut c = Client::new(Conn::stdio("automation", &["--store", dir.path().to_str().unwrap()])).await;
    cancelled_run(&mut c.conn).await;
}
