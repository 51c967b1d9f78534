//! Bounded evaluation (Part II §10.1) on `automation/v1`: a validation bound exceeded is the
//! request error `bounds_exceeded` (at validate and at execute's re-validation alike); an
//! execution bound exceeded is an `ok: false` outcome (`partial`) with the trace so far. The
//! bounds are the runtime's `Limits`, overridden per Language with `ServerBuilder::limits`.

use crate::kit;

use std::time::Duration;

use kit::{assert_request_error, ctx, ids, Client, TempStore, ARG, VALIDATE};
use pilotage::engine::Limits;
use serde_json::{json, Value};

/// `levels` loops nested in each other around one `set` step.
fn nested(levels: usize) -> Value {
    let mut inner = json!({"id": "leaf", "set": "$.vars.v1"});
    for n in (1..=levels).rev() {
        inner = json!({"id": format!("l{n}"), "loop": [n], "as": format!("v{n}"), "steps": [inner]});
    }
    json!({"steps": [inner]})
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[tokio::test]
async fn validation_bounds_are_request_errors() {
    let store = TempStore::new("bounds");
    let mut c = Client::duplex(&kit::server_on(store.path(), None)).await;
    let deep = nested(40);
    let d = depth(&deep);
    assert!(d > 64, "{d}");
    let refused = c.conn.call(VALIDATE, json!({ARG: deep, "context": ctx()})).await;
    assert_request_error(&refused, "bounds_exceeded");
    assert_eq!(
        refused.structured["error"]["message"],
        format!("program nests {d} levels deep; the bound is 64")
    );
    // Execute re-validates under the same bound: a request error, nothing runs.
    let run = c.conn.call(kit::EXECUTE, json!({ARG: deep, "context": ctx(), "mode": "immediate"})).await;
    assert_request_error(&run, "bounds_exceeded");
    // Accepted: ten levels; the leaf's id carries one #n per enclosing loop.
    let ok = c.run(&nested(10), "immediate", json!({})).await;
    assert_eq!(ok["outcome"]["status"], "success");
    assert_eq!(ids(&ok).last().unwrap(), "leaf#1#1#1#1#1#1#1#1#1#1");
    assert_eq!(ids(&ok)[9], "l10#1#1#1#1#1#1#1#1#1");

    // The program-size bound, overridden small.
    let small = Limits { max_program_bytes: 2000, ..Limits::default() };
    let mut c = Client::duplex(&kit::server_on(store.path(), Some(small))).await;
    let big = json!({"steps": [{"id": "s", "set": "x".repeat(3000)}]});
    let size = big.to_string().len();
    let refused = c.conn.call(VALIDATE, json!({ARG: big, "context": ctx()})).await;
    assert_request_error(&refused, "bounds_exceeded");
    assert_eq!(refused.structured["error"]["message"], format!("program is {size} bytes; the bound is 2000"));
    let fits = c.validate(&json!({"steps": [{"id": "s", "set": "x".repeat(100)}]})).await;
    assert_eq!(fits["valid"], true);
}

fn counting(items: usize) -> Value {
    json!({"steps": [{"id": "each", "loop": vec![1; items], "as": "x", "steps": [
        {"id": "add", "call": "counter_add", "with": {"by": "$.vars.x"}}
    ]}]})
}

/// The step bound (trace entries plus loop decisions) stops the run: `partial`, with the
/// trace recorded so far.
#[tokio::test]
async fn the_step_bound_stops_a_run_with_the_trace_so_far() {
    let store = TempStore::new("bounds");
    let limits = Limits { max_steps: 20, ..Limits::default() };
    let mut c = Client::duplex(&kit::server_on(store.path(), Some(limits))).await;
    let r = c.run(&counting(50), "immediate", json!({})).await;
    assert_eq!(
        r["outcome"],
        json!({"ok": false, "status": "partial",
               "error": "execution stopped at a resource bound (the server's step or time bound, or 100000 loop iterations)"})
    );
    // The loop entry and its decisions count: 1 + 10 continues + 9 steps = 20.
    let expected: Vec<String> =
        std::iter::once("each".to_owned()).chain((1..=9).map(|i| format!("add#{i}"))).collect();
    assert_eq!(ids(&r), expected);
    let each = kit::entry(&r, "each");
    assert_eq!(
        each["outcome"],
        json!({"ok": false, "status": "partial", "error": "item 10 of 50 did not complete"})
    );
    assert_eq!(kit::decisions(&r, "each").len(), 10);
    assert_eq!(c.fingerprint().await["counter"], 9, "the trace shows every effect that happened");
    // Accepted: within the bound.
    let ok = c.run(&counting(5), "immediate", json!({})).await;
    assert_eq!(ok["outcome"]["status"], "success");
    assert_eq!(ids(&ok).len(), 6);
}

/// The time bound holds against an engine that blocks its thread (the `wait` action sleeps):
/// the run ends `partial` with the trace so far, and the engine stops at its next check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_bound_stops_a_slow_run() {
    let store = TempStore::new("bounds");
    let limits = Limits { execute_time: Duration::from_millis(400), ..Limits::default() };
    let mut c = Client::duplex(&kit::server_on(store.path(), Some(limits))).await;
    let slow = |items: usize| {
        json!({"steps": [{"id": "each", "loop": vec![100; items], "as": "ms", "steps": [
            {"id": "pause", "call": "wait", "with": {"ms": "$.vars.ms"}},
            {"id": "add", "call": "counter_add", "with": {"by": 1}}
        ]}]})
    };
    let started = std::time::Instant::now();
    // Unbounded, the run would take 5 s; at the bound it answers after 400 ms, and well within
    // 3 s even on a loaded machine.
    let r = c.run(&slow(50), "immediate", json!({})).await;
    assert!(started.elapsed() < Duration::from_secs(3), "answered at the bound: {:?}", started.elapsed());
    assert_eq!(
        r["outcome"],
        json!({"ok": false, "status": "partial", "error": "execution exceeded its time bound of 400ms"})
    );
    let ids = ids(&r);
    assert_eq!(ids[0], "each");
    let adds = ids.iter().filter(|i| i.starts_with("add#")).count();
    assert!((1..=4).contains(&adds), "at most four 100 ms iterations fit in 400 ms: {ids:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let counter = c.fingerprint().await["counter"].as_u64().unwrap() as usize;
    assert!(counter == adds || counter == adds + 1, "the engine stopped: counter {counter}, traced {adds}");
    // Accepted: within the bound.
    let ok = c.run(&slow(2), "immediate", json!({})).await;
    assert_eq!(ok["outcome"]["status"], "success");
}
