//! Fair engine slots (issue 28), through a real transport: one caller cannot take every engine
//! slot while others wait, a queued run keeps its whole time bound, catalog look-ups have a
//! lane of their own, and a task waits for a slot within its time to live instead of ending
//! with `bounds_exceeded`. On the `automation/v1` engine, whose `wait` action holds an engine
//! slot for as long as it sleeps: the busy caller over duplex (the process's ambient caller,
//! several requests in flight), the others each over an HTTP session of its own (each session
//! its own caller) on the same server.

use std::sync::Arc;
use std::time::Duration;

use crate::long_runs::{initialize_with_tasks, slow_loop, task_end};
use crate::{automation, kit, support};

use kit::{ctx, TempStore, ARG, EXECUTE, LANGUAGE, VALIDATE};
use pilotage::engine::Limits;
use pilotage::state::SqliteState;
use serde_json::{json, Value};
use support::Conn;

/// An automation/v1 server with `slots` engine slots and `limits`, on the store file of `store`.
fn server(store: &TempStore, slots: usize, limits: Limits) -> pilotage::Server {
    let state = SqliteState::open(store.path()).expect("open the run store");
    pilotage::Server::builder()
        .name("fair-slots", "0")
        .language(automation::Automation::new)
        .limits(limits)
        .max_engine_calls(slots)
        .state(Arc::new(state))
        .build()
        .expect("the server builds")
}

fn run_args(program: &Value) -> Value {
    json!({ARG: program, "mode": "immediate", "context": ctx()})
}

const SUCCESS: fn() -> Value = || json!({"ok": true, "status": "success", "error": null});

/// One caller starts 8 runs of 3 s on a server of 8 slots (4 per caller). Another caller's
/// validate, execute and catalog look-up are answered meanwhile (they used to wait 2 s for a
/// slot and be refused). The first caller's runs past its share wait behind its own: each
/// either succeeds or is refused because its own share stayed busy, and never because the
/// server did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_caller_with_eight_long_runs_leaves_slots_for_the_others() {
    let store = TempStore::new("fair-share");
    let server = server(&store, 8, Limits::default());
    let http = support::HttpServer::start(&server).await;
    let mut hog = Conn::duplex(&server);
    hog.initialize(true).await;
    let mut other = http.connect(support::HttpStyle::Plain);
    other.initialize(true).await;
    let program = slow_loop(30, 100);
    let mut started = Vec::new();
    for _ in 0..8 {
        started
            .push(hog.start("tools/call", json!({"name": EXECUTE, "arguments": run_args(&program)})).await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let small = json!({"steps": [{"id": "pause", "call": "wait", "with": {"ms": 0}}]});
    let validated = other.call_ok(VALIDATE, json!({ARG: small, "context": ctx()})).await;
    assert_eq!(validated["valid"], true, "{validated}");
    let ran = other.call_ok(EXECUTE, run_args(&small)).await;
    assert_eq!(ran["outcome"], SUCCESS(), "{ran}");
    let listed = other.call_ok("pilotage_catalog", json!({"language": LANGUAGE, "verb": "list"})).await;
    assert!(listed["items"].as_array().is_some_and(|i| !i.is_empty()), "{listed}");
    // The runs answer in any order.
    let mut responses: Vec<Value> = Vec::new();
    while responses.len() < started.len() {
        let seen: Vec<u64> = responses.iter().filter_map(|r| r["id"].as_u64()).collect();
        let ours = |m: &Value| {
            m.get("method").is_none()
                && m["id"].as_u64().is_some_and(|i| started.contains(&i) && !seen.contains(&i))
        };
        responses.push(hog.message_where(ours).await);
    }
    let share = |what: &str| json!({"kind": "bounds_exceeded", "message": format!("{what} could not start within its wait bound of 2s: this caller's other calls held its share of the engine slots (4 of 8) the whole time; retry later")});
    let mut succeeded = 0;
    for response in responses {
        hog.check_tool_result(EXECUTE, &response["result"]).await;
        let result = &response["result"]["structuredContent"];
        if result["outcome"] == SUCCESS() {
            assert_eq!(result["trace"]["steps"].as_array().map(Vec::len), Some(31), "{response}");
            succeeded += 1;
        } else {
            let refused = &result["error"];
            assert!(
                *refused == share("the catalog snapshot") || *refused == share("validation"),
                "{response}"
            );
        }
    }
    assert!(succeeded >= 4, "{succeeded} of 8 runs succeeded");
}

/// A run holds the only slot for 3 s. Another caller's plain execute is refused once it has
/// waited as long as its catalog snapshot's own bound (2 s), and the refusal says so; the same
/// execute as a task waits for the slot and completes with the run's real outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waits_for_a_slot_within_its_time_to_live() {
    let store = TempStore::new("fair-task");
    let server = server(&store, 1, Limits::default());
    let http = support::HttpServer::start(&server).await;
    let mut hog = Conn::duplex(&server);
    hog.initialize(true).await;
    let long =
        hog.start("tools/call", json!({"name": EXECUTE, "arguments": run_args(&slow_loop(30, 100))})).await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    let mut plain = http.connect(support::HttpStyle::Plain);
    plain.initialize(true).await;
    let small = json!({"steps": [{"id": "pause", "call": "wait", "with": {"ms": 0}}]});
    let refused = plain.call(EXECUTE, run_args(&small)).await;
    assert!(refused.is_error, "{}", refused.raw);
    assert_eq!(
        refused.structured["error"],
        json!({"kind": "bounds_exceeded", "message": "the catalog snapshot could not start within its wait bound of 2s: every engine slot of this server stayed busy (1 in all); retry later"}),
        "{}",
        refused.raw
    );

    let mut tasked = http.connect(support::HttpStyle::Full);
    initialize_with_tasks(&mut tasked).await;
    let response =
        tasked.request("tools/call", json!({"name": EXECUTE, "arguments": run_args(&small)})).await;
    let task_id = response["result"]["taskId"].as_str().expect("a task").to_owned();
    let done = task_end(&mut tasked, &task_id).await;
    assert_eq!(done["status"], "completed", "{done}");
    tasked.check_tool_result(EXECUTE, &done["result"]).await;
    assert_eq!(done["result"]["structuredContent"]["outcome"], SUCCESS(), "{done}");
    let long = hog.finish(long).await;
    hog.check_tool_result(EXECUTE, &long["result"]).await;
    assert_eq!(long["result"]["structuredContent"]["outcome"], SUCCESS(), "{long}");
}
